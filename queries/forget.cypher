// `kgagent memory forget TEXT` (kgagent/memory/forget.py): the rows that may hold a text
// read from the screen or typed, then their removal by id, in one transaction.

// name: forget_object_rows
// Every object with its text: the label read from its crop, and its name.
MATCH (o:Object) RETURN o.id AS id, o.name AS name, o.label AS label ORDER BY id;

// name: forget_skill_rows
// Every skill with its texts: name, description, operations (JSON).
MATCH (k:Skill)
RETURN k.id AS id, k.name AS name, k.description AS description, k.operations AS operations
ORDER BY id;

// name: forget_cluster_rows
// Every action cluster with its texts.
MATCH (c:SkillCluster) RETURN c.id AS id, c.name AS name, c.description AS description ORDER BY id;

// name: forget_input_keys
// Every input statistic's key (`type:<text>`, `object:<object id>:<action>`, ...).
MATCH (i:InputStat) RETURN i.key AS key ORDER BY key;

// name: forget_state_stats_rows
// Every state's exploration record (JSON) that is not empty.
MATCH (s:State) WHERE s.mcts <> '' RETURN s.id AS id, s.mcts AS mcts ORDER BY id;

// name: forget_skill_edges
// The skill edges of the skills $skills (an edge names its skill by id).
MATCH (:State)-[e:SKILL_EDGE]->(:State) WHERE e.skill IN $skills DELETE e;

// name: forget_skills
// The skills $skills, with their USES and MEMBER_OF.
MATCH (k:Skill) WHERE k.id IN $skills DETACH DELETE k;

// name: forget_parents
// The skills grown from one of $skills keep no parent.
MATCH (k:Skill) WHERE k.parent_id IN $skills SET k.parent_id = '';

// name: forget_clusters
// The clusters $clusters, with their MEMBER_OF (their skills are clustered again later).
MATCH (c:SkillCluster) WHERE c.id IN $clusters DETACH DELETE c;

// name: forget_input_stats
// The input statistics of the keys $keys.
MATCH (i:InputStat) WHERE i.key IN $keys DELETE i;

// name: forget_objects
// The objects $objects, with their HAS_OBJECT and USES.
MATCH (o:Object) WHERE o.id IN $objects DETACH DELETE o;
