// name: graph_stats
// The columns of the papers' Table 2.
MATCH (k:Skill)
WITH count(k) AS augmented, sum(CASE WHEN k.status = 'pruned' THEN 1 ELSE 0 END) AS pruned
OPTIONAL MATCH (s:State)
WITH augmented, pruned, count(s) AS nodes
OPTIONAL MATCH (:State)-[e:SKILL_EDGE]->(:State)
WITH augmented, pruned, nodes, count(e) AS skill_edges
OPTIONAL MATCH (:State)-[m:SIMILAR]->(:State)
WITH augmented, pruned, nodes, skill_edges, count(m) AS similarity_edges
OPTIONAL MATCH (o:Object)
WITH augmented, pruned, nodes, skill_edges, similarity_edges, count(o) AS objects
OPTIONAL MATCH (c:SkillCluster)
RETURN augmented - pruned AS library_size, augmented AS skills_augmented,
       pruned AS skills_pruned, nodes, skill_edges, similarity_edges, objects,
       count(c) AS clusters;
