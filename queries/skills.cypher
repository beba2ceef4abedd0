// name: skill_create
CREATE (k:Skill {id: $skill, name: $name, description: $description, operations: $operations,
                 fitness: 0.0, executions: 0, status: 'active', parent_id: $parent_id,
                 failures: 0, low_rewards: 0, created_at: $now})
RETURN k.id AS id;

// name: skill_get
MATCH (k:Skill {id: $skill})
RETURN k.id AS id, k.name AS name, k.description AS description, k.operations AS operations,
       k.fitness AS fitness, k.executions AS executions, k.status AS status,
       k.parent_id AS parent_id, k.failures AS failures, k.low_rewards AS low_rewards,
       k.created_at AS created_at;

// name: skills_all
MATCH (k:Skill)
RETURN k.id AS id, k.name AS name, k.description AS description, k.operations AS operations,
       k.fitness AS fitness, k.executions AS executions, k.status AS status,
       k.parent_id AS parent_id, k.failures AS failures, k.low_rewards AS low_rewards,
       k.created_at AS created_at
ORDER BY k.created_at, k.id;

// name: skill_update
MATCH (k:Skill {id: $skill})
SET k.name = $name, k.description = $description, k.operations = $operations,
    k.fitness = $fitness, k.executions = $executions, k.status = $status,
    k.failures = $failures, k.low_rewards = $low_rewards;

// name: skill_edge_bump
// One more execution of a skill along an existing edge src -> dst: the mean visual change Δ over
// its executions, the count, the last R_total, and the Eq. 1 weight sigmoid(α·mean Δ + $fit_term),
// where the caller passes $fit_term = (1 − α)·φ/(φ + C0). The dialect has no exp(): e^x is
// pow(e, x). The weight is set first, with the new mean written out from the old mean and
// count (SET reads the values before it). No row: the edge is new
// (skill_edge_create). MATCH + SET, then CREATE when needed, measured faster than one MERGE.
MATCH (a:State {id: $src})-[e:SKILL_EDGE {skill: $skill}]->(b:State {id: $dst})
SET e.weight = 1.0 / (1.0 + pow(2.718281828459045,
        -($alpha * ((e.change * e.count + $change) / (e.count + 1)) + $fit_term))),
    e.change = (e.change * e.count + $change) / (e.count + 1), e.count = e.count + 1,
    e.r_total = $r_total, e.updated = $now
RETURN e.weight AS weight, e.change AS change, e.count AS count, e.r_total AS r_total;

// name: skill_edge_create
// The first execution of a skill from src to dst (see skill_edge_bump).
MATCH (a:State {id: $src}), (b:State {id: $dst})
CREATE (a)-[e:SKILL_EDGE {skill: $skill, change: $change, count: 1, r_total: $r_total,
    updated: $now, weight: 1.0 / (1.0 + pow(2.718281828459045, -($alpha * $change + $fit_term)))}]->(b)
RETURN e.weight AS weight, e.change AS change, e.count AS count, e.r_total AS r_total;

// name: skill_edge_get
MATCH (a:State {id: $src})-[e:SKILL_EDGE {skill: $skill}]->(b:State {id: $dst})
RETURN e.weight AS weight, e.change AS change, e.count AS count, e.r_total AS r_total;

// name: skill_edges_of
// Every edge a skill has labelled.
MATCH (a:State)-[e:SKILL_EDGE]->(b:State)
WHERE e.skill = $skill
RETURN a.id AS src, b.id AS dst, e.weight AS weight, e.change AS change, e.count AS count,
       e.r_total AS r_total
ORDER BY e.weight DESC;

// name: pruning_candidates
// Skills executed more often than the library mean, lowest UCB (Eq. 6's form, no penalty,
// exploration constant: library.prune_c) first.
MATCH (k:Skill) WHERE k.status <> 'pruned'
WITH avg(CAST(k.executions AS DOUBLE)) AS mean, sum(k.executions) AS total
MATCH (s:Skill)
WHERE s.status <> 'pruned' AND CAST(s.executions AS DOUBLE) > mean
RETURN s.id AS skill, s.name AS name, s.executions AS executions, s.fitness AS fitness,
       s.fitness + $c * sqrt(ln(CAST(total AS DOUBLE)) / CAST(s.executions AS DOUBLE)) AS ucb
ORDER BY ucb ASC, skill
LIMIT $limit;

// name: skill_prune
// Mark pruned; edges are removed by skill_drop_edges / skill_drop_links.
MATCH (k:Skill {id: $skill}) SET k.status = 'pruned';

// name: skill_drop_edges
MATCH (:State)-[e:SKILL_EDGE]->(:State) WHERE e.skill = $skill DELETE e;

// name: skill_drop_memberships
MATCH (k:Skill {id: $skill})-[m:MEMBER_OF]->(:SkillCluster) DELETE m;

// name: skill_drop_uses
MATCH (k:Skill {id: $skill})-[u:USES]->(:Object) DELETE u;

// name: skill_library
// The skill library with fitness and use, for people.
MATCH (k:Skill) WHERE k.status <> 'pruned'
OPTIONAL MATCH (k)-[:MEMBER_OF]->(c:SkillCluster)
RETURN k.id AS id, k.name AS name, k.status AS status, k.fitness AS fitness,
       k.executions AS executions, c.name AS cluster
ORDER BY k.fitness DESC, k.id;
