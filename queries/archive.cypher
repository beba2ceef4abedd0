// Export / import of a memory as one portable archive (kgagent/memory/archive_*.py),
// and the consistency checks of `kgagent memory check` (Memory.check).
// Every archive_export_<table> query returns the table's columns in the order of the
// schema (rel tables: src and dst ids first); archive_load_<table> bulk-loads a
// pyarrow table passed as $rows (COPY FROM a parameter: no file path, no user data in
// the query text). A table without both queries (and its catalog_columns_<table> in
// catalog.cypher) cannot be exported (archive_export.py checks).

// name: archive_export_state
MATCH (n:State)
RETURN n.id AS id, n.feature_rev AS feature_rev, n.visits AS visits, n.first_seen AS first_seen,
       n.last_seen AS last_seen, n.thumbnail AS thumbnail, n.mcts AS mcts, n.origin AS origin
ORDER BY id;

// name: archive_export_skill
MATCH (n:Skill)
RETURN n.id AS id, n.name AS name, n.description AS description, n.operations AS operations,
       n.fitness AS fitness, n.executions AS executions, n.status AS status,
       n.parent_id AS parent_id, n.failures AS failures, n.low_rewards AS low_rewards,
       n.created_at AS created_at, n.origin AS origin
ORDER BY id;

// name: archive_export_object
MATCH (n:Object)
RETURN n.id AS id, n.name AS name, n.crop AS crop, n.x AS x, n.y AS y, n.w AS w, n.h AS h,
       n.phash AS phash, n.created_at AS created_at, n.label AS label, n.origin AS origin
ORDER BY id;

// name: archive_export_skillcluster
MATCH (n:SkillCluster)
RETURN n.id AS id, n.name AS name, n.description AS description, n.selections AS selections,
       n.origin AS origin
ORDER BY id;

// name: archive_export_inputstat
MATCH (n:InputStat)
RETURN n.key AS key, n.kind AS kind, n.tried AS tried, n.changed AS changed,
       n.updated AS updated
ORDER BY key;

// name: archive_export_similar
MATCH (a:State)-[e:SIMILAR]->(b:State)
RETURN a.id AS src, b.id AS dst, e.weight AS weight
ORDER BY src, dst;

// name: archive_export_skill_edge
MATCH (a:State)-[e:SKILL_EDGE]->(b:State)
RETURN a.id AS src, b.id AS dst, e.skill AS skill, e.weight AS weight, e.change AS change,
       e.count AS count, e.r_total AS r_total, e.updated AS updated
ORDER BY src, dst, skill;

// name: archive_export_member_of
MATCH (a:Skill)-[e:MEMBER_OF]->(b:SkillCluster)
RETURN a.id AS src, b.id AS dst
ORDER BY src, dst;

// name: archive_export_has_object
MATCH (a:State)-[e:HAS_OBJECT]->(b:Object)
RETURN a.id AS src, b.id AS dst
ORDER BY src, dst;

// name: archive_export_uses
MATCH (a:Skill)-[e:USES]->(b:Object)
RETURN a.id AS src, b.id AS dst, e.position AS position
ORDER BY src, dst, position;

// name: archive_load_state
COPY State FROM $rows;

// name: archive_load_skill
COPY Skill FROM $rows;

// name: archive_load_object
COPY Object FROM $rows;

// name: archive_load_skillcluster
COPY SkillCluster FROM $rows;

// name: archive_load_inputstat
COPY InputStat FROM $rows;

// name: archive_load_similar
COPY SIMILAR FROM $rows;

// name: archive_load_skill_edge
COPY SKILL_EDGE FROM $rows;

// name: archive_load_member_of
COPY MEMBER_OF FROM $rows;

// name: archive_load_has_object
COPY HAS_OBJECT FROM $rows;

// name: archive_load_uses
COPY USES FROM $rows;

// name: check_blob_refs
// Every blob id the graph refers to (state thumbnails, object crops), for `memory check`.
MATCH (s:State) WHERE s.thumbnail <> '' RETURN DISTINCT s.thumbnail AS blob, 'State' AS owner
UNION
MATCH (o:Object) WHERE o.crop <> '' RETURN DISTINCT o.crop AS blob, 'Object' AS owner;

// name: check_dangling_skill_edges
// Skill edges whose skill is missing or pruned (pruning must leave none).
MATCH (a:State)-[e:SKILL_EDGE]->(b:State)
OPTIONAL MATCH (k:Skill {id: e.skill})
WITH a, b, e, k
WHERE k IS NULL OR k.status = 'pruned'
RETURN a.id AS src, b.id AS dst, e.skill AS skill;
