// name: cluster_create
CREATE (c:SkillCluster {id: $cluster, name: $name, description: $description, selections: 0})
RETURN c.id AS id;

// name: clusters_all
MATCH (c:SkillCluster)
OPTIONAL MATCH (k:Skill)-[:MEMBER_OF]->(c)
RETURN c.id AS id, c.name AS name, c.description AS description, c.selections AS selections,
       list_sort(collect(k.id)) AS skills
ORDER BY id;

// name: cluster_add_member
MATCH (k:Skill {id: $skill}), (c:SkillCluster {id: $cluster})
MERGE (k)-[:MEMBER_OF]->(c);

// name: cluster_of
MATCH (k:Skill {id: $skill})-[:MEMBER_OF]->(c:SkillCluster)
RETURN c.id AS id
ORDER BY id;

// name: cluster_select
MATCH (c:SkillCluster {id: $cluster})
SET c.selections = c.selections + 1
RETURN c.selections AS selections;

// name: cluster_states
// States from which the cluster's skills were executed (their source states).
MATCH (k:Skill)-[:MEMBER_OF]->(c:SkillCluster {id: $cluster})
MATCH (s:State)-[e:SKILL_EDGE]->(:State)
WHERE e.skill = k.id
RETURN DISTINCT s.id AS id
ORDER BY id;
