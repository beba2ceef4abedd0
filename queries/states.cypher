// name: state_get
// One state node.
MATCH (s:State {id: $state})
RETURN s.id AS id, s.feature_rev AS feature_rev, s.visits AS visits,
       s.first_seen AS first_seen, s.last_seen AS last_seen, s.thumbnail AS thumbnail;

// name: state_revisions
// Every state with the feature revision the graph committed (vector consistency).
MATCH (s:State) RETURN s.id AS id, s.feature_rev AS feature_rev
ORDER BY id;

// name: state_create
CREATE (s:State {id: $state, feature_rev: $rev, visits: 1, first_seen: $now,
                 last_seen: $now, thumbnail: $thumbnail, mcts: ''})
RETURN s.id AS id;

// name: state_merge_visit
// An observation merged into an existing state: count the visit, commit its new feature revision.
MATCH (s:State {id: $state})
SET s.visits = s.visits + 1, s.last_seen = $now, s.feature_rev = $rev
RETURN s.visits AS visits;

// name: similar_of
// Similarity edges of one state (undirected).
MATCH (s:State {id: $state})-[e:SIMILAR]-(u:State)
RETURN u.id AS id, e.weight AS weight
ORDER BY id;

// name: similar_create_out
// New similarity edges $state -> other, in one statement: rows = [{id, weight}].
// Each pair is stored once, smaller id first; readers treat SIMILAR as undirected.
MATCH (a:State {id: $state})
UNWIND $rows AS r
MATCH (b:State {id: r.id})
CREATE (a)-[:SIMILAR {weight: r.weight}]->(b);

// name: similar_create_in
// New similarity edges other -> $state (rows = [{id, weight}]).
MATCH (a:State {id: $state})
UNWIND $rows AS r
MATCH (b:State {id: r.id})
CREATE (b)-[:SIMILAR {weight: r.weight}]->(a);

// name: similar_set_weight_out
// Re-weigh edges stored $state -> other ($ids, $weights: parallel lists). An undirected SET trips an
// assertion in kuzu 0.11.3, so each stored direction has its own statement.
// One scan of the adjacency: $ids[i] gets $weights[i].
MATCH (a:State {id: $state})-[e:SIMILAR]->(b:State)
WHERE list_contains($ids, b.id)
SET e.weight = $weights[list_position($ids, b.id)];

// name: similar_set_weight_in
// Re-weigh edges stored other -> $state ($ids, $weights: parallel lists).
MATCH (a:State {id: $state})<-[e:SIMILAR]-(b:State)
WHERE list_contains($ids, b.id)
SET e.weight = $weights[list_position($ids, b.id)];

// name: similar_delete_out
// Both engines refuse DELETE through an undirected pattern: one statement per direction.
MATCH (a:State {id: $state})-[e:SIMILAR]->(b:State)
WHERE b.id IN $ids
DELETE e;

// name: similar_delete_in
MATCH (b:State)-[e:SIMILAR]->(a:State {id: $state})
WHERE b.id IN $ids
DELETE e;

// name: neighbourhood
// Eq. 2: the state and every state joined to it by a similarity edge.
MATCH (v:State {id: $state})
RETURN v.id AS id, 1.0 AS weight
UNION ALL
MATCH (v:State {id: $state})-[e:SIMILAR]-(u:State)
RETURN u.id AS id, e.weight AS weight;

// name: hq_candidates
// Eq. 3: the raw rows behind S_HQ: one per outgoing skill edge of the state and its similar states, unordered, suspended skills included.
// (Memory.hq_candidates keeps each skill's best edge, best first, and drops suspended
// skills; pruned skills have no edges left.)
// Two parts (the state itself, then its similar states): measured twice as fast as one
// variable-length path (v)-[:SIMILAR*0..1]-(u). Rows come unordered; Memory sorts them.
MATCH (u:State {id: $state})-[e:SKILL_EDGE]->(w:State)
RETURN e.skill AS skill, e.weight AS weight, u.id AS from_state, w.id AS to_state
UNION ALL
MATCH (v:State {id: $state})-[:SIMILAR]-(u:State)-[e:SKILL_EDGE]->(w:State)
RETURN e.skill AS skill, e.weight AS weight, u.id AS from_state, w.id AS to_state;

// name: state_potential
// Eq. 10: the weights of v's outgoing skill edges, whose sum is V_S(v). Summed by
// Memory.state_potential, exactly rounded: an engine's sum depends on the order it
// reads the edges in, and LadybugDB and Kùzu differed in the last digit.
MATCH (v:State {id: $state})
OPTIONAL MATCH (v)-[e:SKILL_EDGE]->(:State)
RETURN v.id AS id, collect(e.weight) AS weights;

// name: state_stats_get
MATCH (s:State {id: $state}) RETURN s.mcts AS mcts;

// name: state_stats_put
MATCH (s:State {id: $state}) SET s.mcts = $stats;

// name: recent_states
// The most recently seen states.
MATCH (s:State)
RETURN s.id AS id, s.visits AS visits, s.first_seen AS first_seen, s.last_seen AS last_seen
ORDER BY s.last_seen DESC LIMIT $limit;
