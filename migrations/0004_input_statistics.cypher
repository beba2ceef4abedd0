// 0004: program-wide statistics of the inputs augmentation tries (keys, hotkeys, typed
// text, clicks on objects by kind): how often each was tried and how often it changed
// the screen, so later runs and other states start from what this program responds to.
// Immutable once released: change the schema with a new numbered file.
CREATE NODE TABLE InputStat(
    key STRING,
    kind STRING,
    tried INT64,
    changed INT64,
    updated DOUBLE,
    PRIMARY KEY(key));
