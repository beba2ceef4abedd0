// name: migrations_bootstrap
// The bookkeeping table of applied schema migrations (created before 0001).
CREATE NODE TABLE _Migration(version INT64, name STRING, applied_at DOUBLE, PRIMARY KEY(version));

// name: migrations_applied
MATCH (m:_Migration) RETURN m.version AS version, m.name AS name, m.applied_at AS applied_at
ORDER BY m.version;

// name: migration_record
CREATE (:_Migration {version: $version, name: $name, applied_at: $now});
