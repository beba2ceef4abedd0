// Merging memories (kgagent/memory/merge*.py; the rules are in docs/memory.md, "Merging
// memories"). A merge reads its sources with the archive_export_* queries and builds the
// merged memory in a new directory through the memory's own calls (merge_or_create_state,
// upsert_object, add_skill, add_cluster ...); these queries write what those calls do not:
// the added counts, the kept times and the provenance (`origin`, a JSON list of
// {"memory": <source memory id>, "id": <the node's id there>}).

// name: merge_state_fold
// A source state folded into $state (merged into it, or created for it): visits added,
// first and last seen kept, thumbnail, per-state statistics (JSON) and provenance.
MATCH (s:State {id: $state})
SET s.visits = $visits, s.first_seen = $first_seen, s.last_seen = $last_seen,
    s.thumbnail = $thumbnail, s.mcts = $mcts, s.origin = $origin
RETURN s.id AS id;

// name: merge_object_fold_rows
// Source objects folded into the memory's objects ($rows: [{id, crop, created_at, label,
// origin}], one row per object): its reference crop (blob id), first registration, label
// and provenance.
UNWIND $rows AS r
MATCH (o:Object {id: r.id})
SET o.crop = r.crop, o.created_at = r.created_at, o.label = r.label, o.origin = r.origin
RETURN count(o) AS folded;

// name: merge_skill_fold
// A source skill folded into $skill: first creation, the skill it refines, provenance
// (fitness, executions and status go through Memory.update_skill).
MATCH (k:Skill {id: $skill})
SET k.created_at = $created_at, k.parent_id = $parent_id, k.origin = $origin
RETURN k.id AS id;

// name: merge_cluster_fold
// A source cluster folded into $cluster: selections added, provenance.
MATCH (c:SkillCluster {id: $cluster})
SET c.selections = $selections, c.origin = $origin
RETURN c.id AS id;

// name: merge_skill_edge_set
// An existing skill edge with a source edge's executions added: count, mean visual change,
// the later R_total and update time, and the Eq. 1 weight computed by the caller.
MATCH (a:State {id: $src})-[e:SKILL_EDGE {skill: $skill}]->(b:State {id: $dst})
SET e.weight = $weight, e.change = $change, e.count = $count, e.r_total = $r_total,
    e.updated = $updated
RETURN e.count AS count;

// name: merge_skill_edge_create
// A source skill edge the destination lacks, with its count, mean change, last R_total and
// update time; the weight is Eq. 1 at the merged skill's fitness (computed by the caller).
MATCH (a:State {id: $src}), (b:State {id: $dst})
CREATE (a)-[e:SKILL_EDGE {skill: $skill, weight: $weight, change: $change, count: $count,
                          r_total: $r_total, updated: $updated}]->(b)
RETURN e.count AS count;

// name: merge_skill_reweigh
// Every edge of a skill whose fitness the merge changed: Eq. 1 again,
// sigmoid(α·Δ + $fit_term) with $fit_term = (1 − α)·φ/(φ + C0) at the merged fitness.
MATCH (:State)-[e:SKILL_EDGE]->(:State)
WHERE e.skill = $skill
SET e.weight = 1.0 / (1.0 + pow(2.718281828459045, -($alpha * e.change + $fit_term)))
RETURN count(e) AS edges;

// name: merge_input_stat_add
// A source's input statistics added to the destination's (tried and changed summed).
MERGE (n:InputStat {key: $key})
ON CREATE SET n.kind = $kind, n.tried = $tried, n.changed = $changed, n.updated = $updated
ON MATCH SET n.tried = n.tried + $tried, n.changed = n.changed + $changed,
    n.updated = CASE WHEN $updated > n.updated THEN $updated ELSE n.updated END
RETURN n.tried AS tried;

// name: skill_origin
// Which memories (agents) a skill came from: its provenance ('' for a skill this memory
// learned itself).
MATCH (k:Skill {id: $skill})
RETURN k.id AS id, k.name AS name, k.origin AS origin;

// name: state_origin
// Which memories (agents) a state came from ('' for a state this memory saw itself).
MATCH (s:State {id: $state})
RETURN s.id AS id, s.visits AS visits, s.origin AS origin;

// name: merged_skills
// Every skill that came from another memory, with the memory ids and the ids it had there.
MATCH (k:Skill)
WHERE k.origin <> ''
RETURN k.id AS id, k.name AS name, k.status AS status, k.fitness AS fitness,
       k.executions AS executions, k.origin AS origin
ORDER BY k.id;
