// 0003: where a node came from when memories were merged: a JSON list of
// {"memory": <source memory id>, "id": <the node's id there>} ('' for a node this
// memory made itself).
// Immutable once released: change the schema with a new numbered file.
ALTER TABLE State ADD origin STRING DEFAULT '';
ALTER TABLE Skill ADD origin STRING DEFAULT '';
ALTER TABLE Object ADD origin STRING DEFAULT '';
ALTER TABLE SkillCluster ADD origin STRING DEFAULT '';
