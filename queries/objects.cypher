// name: object_create
CREATE (o:Object {id: $object, name: $name, crop: $crop, x: $x, y: $y, w: $w, h: $h,
                  phash: $phash, created_at: $now, label: $label})
RETURN o.id AS id;

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
MATCH (s:State {id: $state}), (o:Object {id: $object})
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
