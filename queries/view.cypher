// What `kgagent view` reads (kgagent/view/source.py). Every query here only reads:
// the view opens the memory read-only, beside an agent that may be writing it.

// name: view_states
// Every state node with what the graph page draws: visits and thumbnail blob id.
MATCH (s:State)
RETURN s.id AS id, s.visits AS visits, s.first_seen AS first_seen, s.last_seen AS last_seen,
       s.thumbnail AS thumbnail
ORDER BY id;

// name: view_skill_edges
// Every skill edge (Eq. 1 weight, mean visual change, executions along it, last R_total).
MATCH (a:State)-[e:SKILL_EDGE]->(b:State)
RETURN a.id AS src, b.id AS dst, e.skill AS skill, e.weight AS weight, e.change AS change,
       e.count AS count, e.r_total AS r_total
ORDER BY src, dst, skill;

// name: view_similar_edges
// Every similarity edge (stored once per pair; weight = cosine of the two states' features).
MATCH (a:State)-[e:SIMILAR]->(b:State)
RETURN a.id AS src, b.id AS dst, e.weight AS weight
ORDER BY src, dst;

// name: view_memberships
// Which cluster each skill belongs to.
MATCH (k:Skill)-[:MEMBER_OF]->(c:SkillCluster)
RETURN k.id AS skill, c.id AS cluster
ORDER BY skill, cluster;

// name: view_state
// One state node (its detail panel).
MATCH (s:State {id: $state})
RETURN s.id AS id, s.visits AS visits, s.first_seen AS first_seen, s.last_seen AS last_seen,
       s.thumbnail AS thumbnail;
