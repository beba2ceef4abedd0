// Earlier forms of per-step statements, kept only so that benchmarks/experiments/memory_parts.py
// --alternatives can time them against the named queries that replaced them
// (docs/benchmarks.md, Memory at scale, "Where a step's time goes"). Not used by kgagent.

// name: hq_candidates_path
// Replaced by hq_candidates (two UNION ALL parts).
MATCH (v:State {id: $state})-[:SIMILAR*0..1]-(u:State)-[e:SKILL_EDGE]->(w:State)
RETURN e.skill AS skill, e.weight AS weight, u.id AS from_state, w.id AS to_state
ORDER BY weight DESC, skill, from_state, to_state;

// name: skill_edge_get
// With skill_edge_merge, replaced by skill_edge_bump (+ skill_edge_create for a new edge).
MATCH (a:State {id: $src})-[e:SKILL_EDGE {skill: $skill}]->(b:State {id: $dst})
RETURN e.weight AS weight, e.change AS change, e.count AS count, e.r_total AS r_total;

// name: skill_edge_merge
MATCH (a:State {id: $src}), (b:State {id: $dst})
MERGE (a)-[e:SKILL_EDGE {skill: $skill}]->(b)
ON CREATE SET e.weight = $weight, e.change = $change, e.count = 1, e.r_total = $r_total, e.updated = $now
ON MATCH SET e.change = (e.change * e.count + $change) / (e.count + 1), e.count = e.count + 1,
             e.r_total = $r_total, e.updated = $now, e.weight = $weight
RETURN e.weight AS weight, e.change AS change, e.count AS count, e.r_total AS r_total;

// name: similar_set_weight_unwind_out
// Replaced by similar_set_weight_out (one adjacency scan with list_contains).
MATCH (a:State {id: $state})
UNWIND $rows AS r
MATCH (a)-[e:SIMILAR]->(b:State {id: r.id})
SET e.weight = r.weight;
