// Transaction control, issued by the memory itself (kgagent/memory/engine.py).
// Internal: a file whose name starts with "_" holds statements that mean nothing on
// their own, so `kgagent query --list` leaves them out and `--name` refuses them.

// name: tx_begin
BEGIN TRANSACTION;

// name: tx_begin_read_only
BEGIN TRANSACTION READ ONLY;

// name: tx_commit
COMMIT;

// name: tx_rollback
ROLLBACK;
