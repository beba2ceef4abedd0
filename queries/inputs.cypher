// Program-wide response counts of inputs (kgagent/memory/inputs.py, migration 0004).

// name: input_stats_all
// Every input tried in this memory: how often, and how often it changed the screen.
MATCH (i:InputStat)
RETURN i.key AS key, i.kind AS kind, i.tried AS tried, i.changed AS changed
ORDER BY key;

// name: input_stats_put
// Set the counts of several inputs ($rows: key, kind, tried, changed; created on first use).
UNWIND $rows AS r
MERGE (i:InputStat {key: r.key})
SET i.kind = r.kind, i.tried = r.tried, i.changed = r.changed, i.updated = $now;

// name: inputs_by_response
// The inputs this program answers most often, with the share of tries that changed the screen.
MATCH (i:InputStat) WHERE i.tried > 0
RETURN i.key AS input, i.kind AS kind, i.tried AS tried, i.changed AS changed,
       CAST(i.changed AS DOUBLE) / i.tried AS response
ORDER BY response DESC, tried DESC, input LIMIT $limit;
