// name: object_create
// New objects in one statement: rows = [{id, name, crop, x, y, w, h, phash, label}].
UNWIND $rows AS r
CREATE (o:Object {id: r.id, name: r.name, crop: r.crop, x: r.x, y: r.y, w: r.w, h: r.h,
                  phash: r.phash, created_at: $now, label: r.label});

// name: object_get
MATCH (o:Object {id: $object})
RETURN o.id AS id, o.name AS name, o.crop AS crop, o.x AS x, o.y AS y, o.w AS w, o.h AS h,
       o.phash AS phash, o.label AS label;

// name: objects_all
MATCH (o:Object)
RETURN o.id AS id, o.name AS name, o.crop AS crop, o.x AS x, o.y AS y, o.w AS w, o.h AS h,
       o.phash AS phash, o.label AS label
ORDER BY o.created_at, o.id;

// name: state_object_link
// A state's objects ($objects: distinct ids) in one statement; links that exist stay as
// they are, ids of no object are skipped.
MATCH (s:State {id: $state})
UNWIND $objects AS oid
MATCH (o:Object {id: oid})
MERGE (s)-[:HAS_OBJECT]->(o);

// name: state_objects
MATCH (s:State {id: $state})-[:HAS_OBJECT]->(o:Object)
RETURN o.id AS id, o.name AS name, o.crop AS crop, o.x AS x, o.y AS y, o.w AS w, o.h AS h,
       o.phash AS phash, o.label AS label
ORDER BY o.y, o.x, o.id;

// name: skill_object_link
MATCH (k:Skill {id: $skill}), (o:Object {id: $object})
MERGE (k)-[u:USES]->(o)
SET u.position = $position;
