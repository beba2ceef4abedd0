// The current schema, for reading. Databases get here through migrations/.
// SIMILAR is stored once per pair (smaller id first) and read undirected.
CREATE NODE TABLE State(
    id STRING,
    feature_rev INT64,
    visits INT64,
    first_seen DOUBLE,
    last_seen DOUBLE,
    thumbnail STRING,
    mcts STRING,
    origin STRING,
    PRIMARY KEY(id));
CREATE NODE TABLE Skill(
    id STRING,
    name STRING,
    description STRING,
    operations STRING,
    fitness DOUBLE,
    executions INT64,
    status STRING,
    parent_id STRING,
    failures INT64,
    low_rewards INT64,
    created_at DOUBLE,
    origin STRING,
    PRIMARY KEY(id));
CREATE NODE TABLE Object(
    id STRING,
    name STRING,
    crop STRING,
    x INT64,
    y INT64,
    w INT64,
    h INT64,
    phash STRING,
    created_at DOUBLE,
    label STRING,
    origin STRING,
    PRIMARY KEY(id));
CREATE NODE TABLE SkillCluster(
    id STRING,
    name STRING,
    description STRING,
    selections INT64,
    origin STRING,
    PRIMARY KEY(id));
CREATE NODE TABLE InputStat(
    key STRING,
    kind STRING,
    tried INT64,
    changed INT64,
    updated DOUBLE,
    PRIMARY KEY(key));
CREATE REL TABLE SIMILAR(FROM State TO State, weight DOUBLE);
CREATE REL TABLE SKILL_EDGE(
    FROM State TO State,
    skill STRING,
    weight DOUBLE,
    change DOUBLE,
    count INT64,
    r_total DOUBLE,
    updated DOUBLE);
CREATE REL TABLE MEMBER_OF(FROM Skill TO SkillCluster);
CREATE REL TABLE HAS_OBJECT(FROM State TO Object);
CREATE REL TABLE USES(FROM Skill TO Object, position INT64);
