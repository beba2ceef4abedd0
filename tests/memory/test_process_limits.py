"""Limits of the process (``ulimit -f``, ``-v``, ``-n``) and a failed checkpoint: one line
that names the limit, nothing reported as damaged, nothing left behind.

Each limit is set with ``resource.setrlimit`` in a child process (Python ignores
SIGXFSZ there, so a write past ``ulimit -f`` fails with EFBIG as it does in a shell).
A child whose engine failed writing leaves with exit status 1 (the database is never
closed again: :func:`kgagent.memory.engine._abandon`).
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.config import Config
from kgagent.errors import KGAgentError, MemoryStoreError
from kgagent.memory import Memory, limits, staging
from kgagent.memory.archive import export_memory
from kgagent.memory.engine import GraphDB, engine_name
from kgagent.memory.files import ProcessLimitError, read_manifest
from kgagent.memory.merge import merge_memories
from kgagent.paths import shell_word

from .conftest import Populated, tree_hash


def run_child(code: str, *args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------ a failed checkpoint

CLOSE_PAST_FSIZE = """
    import json, resource, sys
    from pathlib import Path
    from kgagent.actions import Operation
    from kgagent.config import Config
    from kgagent.errors import MemoryStoreError
    from kgagent.memory import EncoderSpec, Memory
    path = Path(sys.argv[1])
    m = Memory.open(path, Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88)))
    limit = (path / "graph.db").stat().st_size + (64 << 10)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    # committed into the log (below the limit); the checkpoint must grow the graph past it
    ids, total = [], 0
    while total < min(limit // 2, 6 << 20):
        k = m.add_skill(f"big{len(ids)}", "d" * 20000, [Operation("key", key="enter")])
        ids.append(k.id)
        total += 20000
    print(json.dumps(ids), flush=True)
    try:
        m.close()
        print("closed", flush=True)
    except MemoryStoreError as e:
        print("error:", e, flush=True)
"""


def test_a_checkpoint_that_fails_at_close_is_one_line_and_the_log_keeps_everything(
    populated: Populated, tmp_path: Path
) -> None:
    """Both engines close a database without a word when its checkpoint fails (a full
    disk, ``ulimit -f``): `play` ended with exit 0 and a memory that read-only opens
    refuse. The close now says so, and a repair with the limit gone has every write."""
    path = tmp_path / "the memory"  # a space: the printed command must quote it
    shutil.copytree(populated.path, path)
    res = run_child(CLOSE_PAST_FSIZE, path)
    out = res.stdout.splitlines()
    assert "closed" not in out, "the close swallowed the failed checkpoint"
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    ids = json.loads(out[0])
    (line,) = [o for o in out if o.startswith("error:")]
    assert f"could not checkpoint {path / 'graph.db'} (a file reached this process's" in line
    assert "`ulimit -f" in line and "raise the limit (`ulimit -f unlimited`)" in line
    assert f"everything committed is safe in its write-ahead log {path / 'graph.db'}.wal" in line
    assert f"`kgagent memory check --repair --memory {shell_word(path)}`" in line
    rep = CliRunner().invoke(cli, ["memory", "check", "--repair", "--memory", str(path)])
    assert rep.exit_code == 0, rep.output
    with Memory.open(path, Config(), read_only=True) as m:
        have = {r["id"] for r in m.cypher("MATCH (k:Skill) RETURN k.id AS id")}
        assert all(r["status"] == "ok" for r in m.check())
    assert set(ids) <= have and set(populated.skills.values()) <= have


def test_play_whose_last_checkpoint_fails_exits_1_with_one_line(tmp_path: Path) -> None:
    """A run that fills the disk with the reserve off (`play`), with ``ulimit -f``
    in place of the full disk: exit 1 and an `error:` line naming the limit and the repair."""
    mem = tmp_path / "m"
    play = [sys.executable, "-m", "kgagent.cli.main", "play", "--env", "civgame"]
    play += ["--memory", str(mem), "--quiet", "--set", "memory.disk_reserve_mb=0", "--steps"]
    first = subprocess.run(play + ["20"], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    limit = (mem / "graph.db").stat().st_size + (64 << 10)

    def at_limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    res = subprocess.run(
        play + ["15", "--seed", "5"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=at_limit,
    )
    assert res.returncode == 1, res.stdout[-1000:] + res.stderr[-1000:]
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert "could not checkpoint" in errors[0] and "`ulimit -f" in errors[0], errors[0]
    assert f"kgagent memory check --repair --memory {shell_word(mem)}" in errors[0]
    logs = sorted((mem / "runs").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    last = json.loads(logs[-1].read_text().splitlines()[-1])  # the step log says so too
    assert last["type"] == "summary" and last["stopped"] == "error", last
    assert "could not checkpoint" in last["error"]
    rep = CliRunner().invoke(cli, ["memory", "check", "--repair", "--memory", str(mem)])
    assert rep.exit_code == 0, rep.output


@pytest.mark.parametrize(
    ("statement", "msg", "committed"),
    [
        (  # LadybugDB 0.22: the COMMIT (or a statement committing itself)
            "COMMIT",
            "Transaction committed successfully, but the post-commit checkpoint failed. The "
            "committed data is durable and will be recovered on restart: IO exception: Cannot "
            "write to file. path: {g} fileDescriptor: 3 offsetToWrite: 53272576 numBytesToWrite: "
            "4096 numBytesWritten: -1. Error: No space left on device",
            True,
        ),
        (  # Kùzu 0.11.3: the COMMIT's checkpoint fails writing the database file itself
            "COMMIT",
            "IO exception: Cannot write to file. path: {g} fileDescriptor: 3 offsetToWrite: "
            "71700480 numBytesToWrite: 4096 numBytesWritten: -1. Error: No space left on device",
            True,
        ),
        (  # Kùzu 0.11.3: the checkpoint failed, and so did rolling it back
            "COMMIT",
            "Invalid transaction type to rollback.",
            None,
        ),
        (  # either engine: the log itself could not be written
            "COMMIT",
            "IO exception: Cannot write to file. path: {g}.wal fileDescriptor: 4 "
            "offsetToWrite: 4096 numBytesToWrite: 4096 numBytesWritten: -1. Error: No space "
            "left on device",
            False,
        ),
    ],
)
def test_a_failed_commit_says_whether_it_was_committed(
    tmp_path: Path, statement: str, msg: str, committed: bool | None
) -> None:
    """The engines' own words for a commit whose checkpoint failed (observed on a full
    tmpfs), told apart from a log that could not be written: only then is the step lost."""
    g = GraphDB(tmp_path / "graph.db", engine_name(Config().memory.engine))
    try:
        err = g._write_failure(statement, msg.format(g=g.path))
        assert err is not None and err.committed is committed
        line = str(err)
        assert "\n" not in line and "free some space" in line.lower(), line
        full = "No space left" in msg
        assert ("the disk is full" if full else "a full disk, or a file-size limit") in line
        assert f"kgagent memory check --repair --memory {shell_word(tmp_path)}" in line
        if committed:
            assert "everything committed is safe in its write-ahead log" in line
        if committed is False:
            assert "the step was not committed" in line
        assert g._write_failure("MATCH (n) RETURN n", "Binder exception: no table") is None
    finally:
        g.close()


# ------------------------------------------------------------ ulimit -f: import and merge

IMPORT_PAST_FSIZE = """
    import resource, sys
    from kgagent.errors import KGAgentError
    from kgagent.memory.archive import import_memory
    limit = int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    try:
        import_memory(sys.argv[1], sys.argv[2])
        print("imported")
    except KGAgentError as e:
        print("error:", e)
"""


@pytest.mark.parametrize("kib", [256, 2048])
def test_an_import_past_the_file_size_limit_writes_nothing_and_leaves_nothing(
    populated: Populated, tmp_path: Path, kib: int
) -> None:
    """`ulimit -f 1024; memory import` printed the engine's "Transaction committed
    successfully, but the post-commit checkpoint failed … Cannot read from file" (Kùzu:
    aborted, leaving its staging folder). Now: nothing written, the limit named, no
    `.NAME.import-*` left."""
    archive = export_memory(populated.path, tmp_path / "a.tar.gz")["archive"]
    where = tmp_path / "dest"
    where.mkdir()
    target = where / "imp"
    res = run_child(IMPORT_PAST_FSIZE, archive, target, kib << 10)
    out = res.stdout.strip().splitlines()
    if out == ["imported"]:
        pytest.skip(f"this engine's import fits in {kib} KiB files")
    assert "Traceback" not in res.stderr and res.returncode in (0, 1), res.stderr[-2000:]
    (line,) = out
    assert line.startswith(f"error: the import wrote nothing to {target}: "), line
    assert f"file-size limit, `ulimit -f` {kib} KiB" in line, line
    assert "ulimit -f unlimited" in line
    assert not target.exists() and leftovers(where) == []


MERGE_PAST_FSIZE = """
    import resource, sys
    from kgagent.errors import KGAgentError
    from kgagent.memory.merge import merge_memories
    limit = int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    try:
        merge_memories([sys.argv[1]], sys.argv[2])
        print("merged")
    except KGAgentError as e:
        print("error:", e)
"""


def test_a_merge_past_the_file_size_limit_changes_nothing_and_leaves_nothing(
    populated: Populated, tmp_path: Path
) -> None:
    """The merged copy's checkpoint grows the graph past ``ulimit -f``: the destination is
    as it was, the limit is named, and the `.NAME.merge-*` work folder is gone."""
    from kgagent.actions import Operation

    from .conftest import ENC, e

    src = tmp_path / "src"
    with Memory.open(src, Config(), encoder=ENC) as m:
        m.merge_or_create_state(e(9))
        for i in range(60):
            m.add_skill(f"s{i}", "d" * 20000, [Operation("key", key=f"f{i % 12 + 1}")])
    where = tmp_path / "dest"
    where.mkdir()
    dest = where / "m"
    shutil.copytree(populated.path, dest)
    before = tree_hash(dest)
    limit = (dest / "graph.db").stat().st_size + (64 << 10)
    res = run_child(MERGE_PAST_FSIZE, src, dest, limit)
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    (line,) = res.stdout.strip().splitlines()
    assert line.startswith(f"error: the merge changed nothing at {dest}: "), line
    assert "`ulimit -f" in line, line
    assert tree_hash(dest) == before
    assert leftovers(where) == []


# ------------------------------------------------------------ ulimit -v

UNDER_AS_LIMIT = """
    import resource, sys
    import numpy as np
    from kgagent.config import Config
    from kgagent.errors import KGAgentError
    from kgagent.memory import EncoderSpec, Memory, limits
    path, extra = sys.argv[1], int(sys.argv[2])
    limit = limits.mapped_bytes() + extra
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
    try:
        with Memory.open(path, Config(), read_only=True) as m:
            print("read", m.stats().nodes, flush=True)
        with Memory.open(path, Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88))) as m:
            m.merge_or_create_state(np.eye(16)[11])
            print("wrote", m.stats().nodes, m._db.max_db_size, flush=True)
    except KGAgentError as e:
        print("error:", e, flush=True)
"""


def test_a_memory_opens_and_writes_under_an_address_space_limit(
    populated: Populated,
) -> None:
    """`ulimit -v 1500000; kgagent memory check` failed in every command: "Mmap for size
    8796093022208 failed" (the engines reserve 8 TiB). Under a limit the engine maps
    what fits; the database, created without one, opens as it is."""
    before = populated.stats["nodes"]
    res = run_child(UNDER_AS_LIMIT, populated.path, 1400 << 20)
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    assert res.stdout.splitlines()[:1] == [f"read {before}"], res.stdout
    wrote = res.stdout.splitlines()[1].split()
    assert wrote[:2] == ["wrote", str(before + 1)], res.stdout
    assert limits.MIN_DB_BYTES <= int(wrote[2]) < 1 << 40
    with Memory.open(populated.path, Config(), read_only=True) as m:  # and opens without one
        assert m.stats().nodes == before + 1


def test_an_address_space_too_small_for_the_engine_names_ulimit_v(populated: Populated) -> None:
    res = run_child(UNDER_AS_LIMIT, populated.path, 200 << 20)
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    (line,) = res.stdout.splitlines()
    assert line.startswith("error: cannot open the graph database at"), line
    assert "address-space limit (`ulimit -v`" in line and "ulimit -v unlimited" in line, line


def test_engine_sizes_fit_under_the_limit_and_hold_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = tmp_path / "graph.db"
    graph.write_bytes(b"\0" * (3 << 20))
    monkeypatch.setattr(limits, "address_space_limit", lambda: None)
    assert limits.engine_sizes(graph, 0) == [{}]  # no limit: the engine's own defaults
    monkeypatch.setattr(limits, "address_space_limit", lambda: 6 << 30)
    monkeypatch.setattr(limits, "mapped_bytes", lambda: 2 << 30)
    sizes = limits.engine_sizes(graph, 0)
    first = sizes[0]
    assert first["max_db_size"] == 512 << 20  # a quarter of 4 GiB, less pool and threads
    assert first["max_num_threads"] == limits.LIMITED_THREADS
    assert [s["max_db_size"] for s in sizes][-1] == limits.MIN_DB_BYTES
    monkeypatch.setattr(limits, "mapped_bytes", lambda: (6 << 30) - (300 << 20))
    graph.write_bytes(b"\0" * (100 << 20))  # no room left: still what the database needs
    assert [s["max_db_size"] for s in limits.engine_sizes(graph, 0)] == [
        512 << 20,
        256 << 20,
        128 << 20,
    ]


# ------------------------------------------------------------ ulimit -n


def _emfile_on_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    real = pathlib.Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "manifest.json":
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(self))
        return real(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)


def test_too_many_open_files_is_a_limit_not_a_damaged_manifest(
    populated: Populated, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ulimit -n 16; memory merge` said "the manifest … is unreadable ([Errno 24] Too
    many open files); restore it from a backup". A limit of this process damages nothing."""
    _emfile_on_manifest(monkeypatch)
    with pytest.raises(ProcessLimitError) as info:
        read_manifest(populated.path)
    msg = str(info.value)
    assert "`ulimit -n" in msg and "nothing is damaged" in msg, msg
    assert "restore" not in msg and "backup" not in msg
    # a merge into it and an import over it do not take it for "not a kgagent memory"
    with pytest.raises(KGAgentError) as merged:
        merge_memories([populated.path], populated.path)
    assert "`ulimit -n" in str(merged.value) and "not a kgagent memory" not in str(merged.value)
    from kgagent.memory.archive import import_memory

    with pytest.raises(KGAgentError) as imported:
        import_memory(tmp_path / "none.tar.gz", populated.path, force=True)
    assert "`ulimit -n" in str(imported.value), str(imported.value)
    with pytest.raises(MemoryStoreError, match=r"`ulimit -n"):
        Memory.open(populated.path, Config(), read_only=True)


NOFILE = """
    import os, resource, sys
    from pathlib import Path
    from kgagent.errors import MemoryStoreError
    from kgagent.memory.files import read_manifest
    devnull = [os.open(os.devnull, os.O_RDONLY) for _ in range(64)]  # no free descriptor below
    top = max(devnull)
    resource.setrlimit(resource.RLIMIT_NOFILE, (top + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    try:
        read_manifest(Path(sys.argv[1]))
        print("read")
    except MemoryStoreError as e:
        print(type(e).__name__, e)
"""


def test_a_real_open_files_limit_reading_the_manifest(populated: Populated) -> None:
    res = run_child(NOFILE, populated.path)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout.strip()
    assert out.startswith("ProcessLimitError cannot read the manifest"), out
    assert "`ulimit -n" in out and "restore" not in out


def test_a_staging_folder_goes_even_when_rmtree_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``shutil.rmtree`` holds a descriptor per level: at ``ulimit -n`` it failed and left
    `.NAME.import-*` behind; the removal goes on one directory at a time."""
    work = tmp_path / ".m.import-abc"
    (work / "memory" / "vectors" / "states.lance" / "data").mkdir(parents=True)
    (work / "memory" / "vectors" / "states.lance" / "data" / "x.lance").write_bytes(b"x")
    (work / "archive").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "kept").write_bytes(b"k")
    (work / "archive" / "graph").symlink_to(tmp_path / "elsewhere")
    (work / "owner.lock").write_bytes(b"")
    monkeypatch.setattr(shutil, "rmtree", lambda *a, **k: None)  # EMFILE, ignore_errors
    staging.remove(work)
    assert not os.path.lexists(work)
    assert (tmp_path / "elsewhere" / "kept").read_bytes() == b"k"  # a link's target stays


FEW_FILES = """
    import resource, sys
    from pathlib import Path
    from kgagent.config import Config
    from kgagent.errors import MemoryStoreError
    from kgagent.memory import Memory
    soft, hard = int(sys.argv[2]), int(sys.argv[3])
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        m = Memory.open(Path(sys.argv[1]), Config())
    except MemoryStoreError as e:
        print(type(e).__name__, e)
    else:
        m.close()
        print("opened", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def test_a_writer_under_too_few_files_is_refused_before_it_touches_the_memory(
    populated: Populated,
) -> None:
    """`ulimit -n 12; kgagent play` failed opening LanceDB after the graph engine had opened
    the memory, whose close was then cut short: every reader refused the memory ("a
    checkpoint … was left unfinished") until a writer opened it again."""
    before = tree_hash(populated.path)
    res = run_child(FEW_FILES, populated.path, 12, 12)
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout.strip()
    assert out.startswith("ProcessLimitError this process may hold only 12 files open"), out
    assert f"at least {limits.MIN_OPEN_FILES}" in out and "`ulimit -n" in out, out
    assert tree_hash(populated.path) == before
    assert not list(populated.path.glob("graph.db.*"))  # no log, no shadow page file
    Memory.open(populated.path, Config(), read_only=True).close()  # a reader opens it


def test_a_low_soft_limit_of_open_files_is_raised_up_to_the_hard_one(
    populated: Populated,
) -> None:
    res = run_child(FEW_FILES, populated.path, 12, 4096)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == f"opened {limits.RAISED_OPEN_FILES}", res.stdout


def test_a_rust_panic_in_lancedb_is_one_line_that_names_the_limit() -> None:
    """LanceDB panics (pyo3's PanicException, a BaseException) where it cannot create its
    runtime's socket under a low `ulimit -n`: that was a traceback."""
    from kgagent.memory import vectors

    class PanicException(BaseException):  # pyo3's, which no module exports
        pass

    said = 'failed to create UnixStream: Os { code: 24, message: "Too many open files" }'
    with pytest.raises(MemoryStoreError) as info:
        with vectors._lance("open the vectors", Path("/m/vectors")):
            raise PanicException(said)
    msg = str(info.value)
    assert msg.startswith("LanceDB could not open the vectors at /m/vectors: failed to create")
    assert "`ulimit -n" in msg and "nothing is damaged" in msg, msg
    with pytest.raises(KeyboardInterrupt):  # what stops a command still stops it
        with vectors._lance("open the vectors", Path("/m/vectors")):
            raise KeyboardInterrupt
