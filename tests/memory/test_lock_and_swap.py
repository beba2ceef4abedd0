"""One writer per memory; an import never replaces a memory being written; a swap
interrupted by SIGKILL is finished by the next open; killed leftovers are removed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from kgagent.config import Config
from kgagent.errors import ArchiveError, MemoryStoreError
from kgagent.memory import Memory, staging
from kgagent.memory.archive import export_memory, import_memory
from kgagent.memory.lock import LOCK_FILE, try_lock

from .conftest import ENC, graph_dump, populate, tree_hash

HOLDER = textwrap.dedent(
    """
    import sys, numpy as np
    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory
    m = Memory.open(sys.argv[1], Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88)))
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "write":
            m.merge_or_create_state(np.random.default_rng(len(line)).normal(size=16))
            print("wrote", flush=True)
        else:
            break
    m.close()
    print("closed", flush=True)
    """
)


def _holder(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


def _say(proc: subprocess.Popen, line: str) -> str:
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def test_import_force_is_refused_while_a_writer_holds_the_memory(tmp_path: Path) -> None:
    src = populate(tmp_path / "src")
    archive = tmp_path / "a.kgmem.tar.gz"
    export_memory(src.path, archive)
    target = tmp_path / "target"
    populate(target)
    holder = _holder(target)
    try:
        before = tree_hash(target, skip=("graph.db", "vectors", LOCK_FILE))
        with pytest.raises(MemoryStoreError) as info:
            import_memory(archive, target, force=True)
        assert "in use by another process" in str(info.value) and "\n" not in str(info.value)
        assert tree_hash(target, skip=("graph.db", "vectors", LOCK_FILE)) == before
        assert _say(holder, "write") == "wrote"  # the writer never noticed
        assert _say(holder, "stop") == "closed"
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert not list(tmp_path.glob(".target.import-*"))
    with Memory.open(target, Config(), encoder=ENC) as m:
        assert m.stats().nodes == 6  # populate's five states plus the holder's one


def test_a_killed_writer_leaves_no_lock_behind(tmp_path: Path) -> None:
    path = tmp_path / "m"
    holder = _holder(path)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    Memory.open(path, Config(), encoder=ENC).close()  # the OS dropped the lock


RACER = textwrap.dedent(
    """
    import sys, time, json
    from kgagent.config import Config
    from kgagent.errors import MemoryStoreError
    from kgagent.memory import Memory
    path, go = sys.argv[1], float(sys.argv[2])
    while time.time() < go:
        time.sleep(0.001)
    try:
        m = Memory.open(path, Config())
    except MemoryStoreError as e:
        print(json.dumps({"error": str(e)}), flush=True)
        sys.exit(0)
    print(json.dumps({"ok": True}), flush=True)
    sys.stdin.readline()  # held until the loser has answered, however slow its start
    m.close()
    """
)


def test_two_processes_creating_one_memory_the_loser_hears_in_use(tmp_path: Path) -> None:
    for round_ in range(4):
        path = tmp_path / f"new-{round_}"
        if round_ >= 2:
            path.mkdir()  # an empty directory the user made: filled in place, under the lock
        go = time.time() + 2.0
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", RACER, str(path), str(go)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        out = []
        try:
            for p in procs:  # each says once it opened or was refused
                line = p.stdout.readline()
                assert line, p.stderr.read()
                out.append(json.loads(line))
        finally:
            for p in procs:
                _, stderr = p.communicate("\n", timeout=120)
                assert p.returncode == 0, stderr
        oks = [o for o in out if o.get("ok")]
        errors = [o["error"] for o in out if "error" in o]
        assert len(oks) == 1 and len(errors) == 1, out
        assert "in use by another process" in errors[0], errors[0]
        assert not list(tmp_path.glob(f".new-{round_}.create-*"))


def test_a_creator_finishing_between_two_looks_is_in_use_not_foreign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race above, made deterministic: the winner writes its manifest and its
    first files after the loser looked for a manifest in the empty directory."""
    import shutil

    from kgagent.memory import lifecycle

    made = tmp_path / "made"
    Memory.open(made, Config()).close()
    path = tmp_path / "new"
    path.mkdir()
    winner = lifecycle.lock_memory(path)
    os.ftruncate(winner.fd, 0)  # as if another process held it (its pid in the lock file)
    os.write(winner.fd, b"1\n")
    real = lifecycle.read_manifest
    looks = []

    def read_then_winner_writes(directory: Path):
        found = real(directory)
        looks.append(found)
        if found is None and len(looks) == 2:  # the loser's look inside its check
            shutil.copy(made / "manifest.json", path / "manifest.json")
            graph = made / lifecycle.GRAPH  # a file or a directory, by engine
            copy = shutil.copytree if graph.is_dir() else shutil.copy
            copy(graph, path / lifecycle.GRAPH)
        return found

    monkeypatch.setattr(lifecycle, "read_manifest", read_then_winner_writes)
    with pytest.raises(MemoryStoreError, match="in use by another process"):
        Memory.open(path, Config())
    assert len(looks) >= 2
    winner.release()


KILL_BETWEEN = textwrap.dedent(
    """
    import os, signal, sys
    from kgagent.memory import archive_import, staging
    from kgagent.memory.archive import import_memory
    archive_import.SWAP_BY_EXCHANGE = False   # force the two-rename swap (no renameat2)
    staging.between_renames = lambda: os.kill(os.getpid(), signal.SIGKILL)
    import_memory(sys.argv[1], sys.argv[2], force=True)
    """
)


def _two_memories(tmp_path: Path) -> tuple[Path, Path, dict]:
    """An archive of memory B, and memory A at the target."""
    b = tmp_path / "b"
    with Memory.open(b, Config(), encoder=ENC) as m:
        for i in range(4):
            m.merge_or_create_state(np.eye(16)[i + 8])
    archive = tmp_path / "b.kgmem.tar.gz"
    export_memory(b, archive)
    with Memory.open(b, Config(), read_only=True) as m:
        want = graph_dump(m)
    target = tmp_path / "target"
    populate(target)
    return archive, target, want


def test_sigkill_between_the_renames_is_finished_by_the_next_open(tmp_path: Path) -> None:
    archive, target, want = _two_memories(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", KILL_BETWEEN, str(archive), str(target)], capture_output=True
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not target.exists()  # killed between the renames: nothing at the target
    (work,) = tmp_path.glob(".target.import-*")
    assert (work / staging.JOURNAL).exists() and (work / staging.PREVIOUS).is_dir()
    # A reader cannot repair; it says what to do.
    with pytest.raises(MemoryStoreError, match="interrupted.*--repair"):
        Memory.open(target, Config(), read_only=True)
    # The next writer (a `kgagent play`) finishes the swap instead of creating an empty memory.
    with Memory.open(target, Config(), encoder=ENC) as m:
        assert graph_dump(m) == want
    assert not list(tmp_path.glob(".target.import-*"))


def test_a_journal_with_the_target_still_in_place_keeps_the_old_memory(tmp_path: Path) -> None:
    """Killed after writing the journal, before the first rename: the import is dropped."""
    target = tmp_path / "target"
    populate(target)
    before = tree_hash(target)
    work = tmp_path / ".target.import-x1"
    (work / staging.NEW).mkdir(parents=True)
    (work / staging.JOURNAL).write_text(json.dumps({"target": str(target)}))
    assert staging.interrupted_swap(target) is None
    done = staging.recover(target)
    assert done == ["removed .target.import-x1 (left by a killed import)"]
    assert tree_hash(target) == before and not work.exists()


def test_exchange_swap_replaces_in_one_step(tmp_path: Path) -> None:
    archive, target, want = _two_memories(tmp_path)
    summary = import_memory(archive, target, force=True)
    assert summary["replaced"] is True
    with Memory.open(target, Config(), read_only=True) as m:
        assert graph_dump(m) == want


def test_stale_leftovers_are_removed_live_ones_kept(tmp_path: Path) -> None:
    archive, target, _ = _two_memories(tmp_path)
    stale_dir = tmp_path / ".target.import-dead"
    (stale_dir / "archive").mkdir(parents=True)
    live_dir = tmp_path / ".target.import-live"
    live_dir.mkdir()
    live = try_lock(live_dir / staging.OWNER)  # held by "another import" (this process)
    stale_tmp = tmp_path / ".out.kgmem.tar.gz.abc123.tmp"
    stale_tmp.write_bytes(b"half an archive")
    live_tmp = tmp_path / ".out.kgmem.tar.gz.def456.tmp"
    live_tmp.write_bytes(b"being written")
    live_tmp_lock = try_lock(live_tmp, create=False)
    try:
        import_memory(archive, target, force=True)
        assert not stale_dir.exists() and live_dir.exists()
        export_memory(target, tmp_path / "out.kgmem.tar.gz")
        assert not stale_tmp.exists() and live_tmp.exists()
    finally:
        live.release()
        live_tmp_lock.release()
    Memory.open(target, Config(), encoder=ENC).close()
    assert not live_dir.exists()  # its owner is gone now: the next open removed it


def test_import_into_a_file_or_unwritable_place_is_one_line(tmp_path: Path) -> None:
    archive, _, _ = _two_memories(tmp_path)
    f = tmp_path / "a-file"
    f.write_text("x")
    with pytest.raises(ArchiveError, match="not a directory"):
        import_memory(archive, f)
    for place in ("/proc/kgagent-test/m", "/sys/kgagent-test/m"):
        with pytest.raises((ArchiveError, MemoryStoreError)) as info:
            import_memory(archive, place)
        assert "\n" not in str(info.value)


def test_the_issue_reproduction_import_force_beside_kgagent_play(tmp_path: Path) -> None:
    """`kgagent play --memory T & sleep; kgagent memory import good.kgmem.tar.gz --memory T --force`."""
    archive, _, _ = _two_memories(tmp_path)
    target, logs = tmp_path / "T", tmp_path / "logs"
    play = subprocess.Popen(
        [sys.executable, "-m", "kgagent.cli.main", "play", "--env", "civgame"]
        + ["--steps", "100000", "--memory", str(target), "--log-dir", str(logs), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(logs.glob("*.jsonl")):
            assert play.poll() is None, play.stderr.read()
            time.sleep(0.2)
        res = subprocess.run(
            [sys.executable, "-m", "kgagent.cli.main", "memory", "import", str(archive)]
            + ["--memory", str(target), "--force"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 1
        assert res.stderr.strip().splitlines()[-1].startswith("error: the memory at")
        assert "in use by another process" in res.stderr
        assert play.poll() is None  # the agent plays on
    finally:
        play.send_signal(signal.SIGINT)  # stops after the current step
        try:
            play.wait(timeout=120)
        except subprocess.TimeoutExpired:
            play.kill()
            play.wait()
        play.stderr.close()
    from click.testing import CliRunner
    from kgagent.cli.main import cli

    check = CliRunner().invoke(cli, ["memory", "check", "--memory", str(target)])
    assert check.exit_code == 0, check.output


@pytest.mark.parametrize("engine", ["kuzu", "ladybug"])
def test_in_use_is_one_sentence_per_clause_whatever_the_engine_says(engine: str) -> None:
    from kgagent.memory.engine import _in_use

    text = _in_use(Path("/m/graph.db"), engine, "IO exception: Could not set lock on file.")
    assert ".." not in text and "\n" not in text
    assert text.startswith("the memory at /m is in use by another process")
