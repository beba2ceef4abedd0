// The graph's catalogue: its tables and their columns, for the engine adapter
// (migrations), export/import (kgagent/memory/archive_*.py) and tests/memory/test_schema.py.
// CALL table_info() takes only a literal table name, not a $parameter: one query per
// table. archive_export.py refuses to export a table without its catalog_columns_ query.

// name: catalog_tables
// Every table of the graph, with its kind (NODE / REL).
CALL show_tables() RETURN name, type ORDER BY name;

// name: catalog_columns_state
// The columns of State in schema order, with their Cypher types.
CALL table_info('State') RETURN name, type;

// name: catalog_columns_skill
// The columns of Skill in schema order, with their Cypher types.
CALL table_info('Skill') RETURN name, type;

// name: catalog_columns_object
// The columns of Object in schema order, with their Cypher types.
CALL table_info('Object') RETURN name, type;

// name: catalog_columns_skillcluster
// The columns of SkillCluster in schema order, with their Cypher types.
CALL table_info('SkillCluster') RETURN name, type;

// name: catalog_columns_inputstat
// The columns of InputStat in schema order, with their Cypher types.
CALL table_info('InputStat') RETURN name, type;

// name: catalog_columns_similar
// The columns of SIMILAR in schema order, with their Cypher types.
CALL table_info('SIMILAR') RETURN name, type;

// name: catalog_columns_skill_edge
// The columns of SKILL_EDGE in schema order, with their Cypher types.
CALL table_info('SKILL_EDGE') RETURN name, type;

// name: catalog_columns_member_of
// The columns of MEMBER_OF in schema order, with their Cypher types (none: it joins two nodes and holds nothing else).
CALL table_info('MEMBER_OF') RETURN name, type;

// name: catalog_columns_has_object
// The columns of HAS_OBJECT in schema order, with their Cypher types (none: it joins two nodes and holds nothing else).
CALL table_info('HAS_OBJECT') RETURN name, type;

// name: catalog_columns_uses
// The columns of USES in schema order, with their Cypher types.
CALL table_info('USES') RETURN name, type;
