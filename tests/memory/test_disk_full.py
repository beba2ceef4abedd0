"""A full disk stops a writer cleanly; a stuck engine call ends the run; a torn log is repaired.

The file systems are small tmpfs mounts (root in CI); where mounting is not
permitted the tests skip and say so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.actions import Operation
from kgagent.config import Config
from kgagent.errors import MemoryStoreError
from kgagent.memory import Memory, diskspace
from kgagent.memory.diskspace import DiskSpaceError, free_bytes

from .conftest import ENC


@contextmanager
def small_fs(where: Path, size_mib: int) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.skip(
            "cannot mount a small tmpfs here (needs root or CAP_SYS_ADMIN; CI has it): "
            + (res.stderr.strip() or "mount failed")
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def config(reserve_mb: float | None = None, commit_timeout_s: float | None = None) -> Config:
    """The default config with the memory's reserve and watchdog set."""
    c = Config()
    if reserve_mb is not None:
        c.memory.disk_reserve_mb = reserve_mb
    if commit_timeout_s is not None:
        c.memory.commit_timeout_s = commit_timeout_s
    return c


def fill(fs: Path, leave: int) -> None:
    """Leave about ``leave`` bytes free on ``fs``."""
    size = free_bytes(fs) - leave
    if size > 0:
        with open(fs / "filler", "wb") as f:
            f.truncate(0)
            os.posix_fallocate(f.fileno(), 0, size)


def test_a_writer_stops_at_the_reserve_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with small_fs(tmp_path / "fs", 48) as fs:
        path = fs / "m"
        rng = np.random.default_rng(0)
        committed: list[str] = []
        m = Memory.open(path, config(reserve_mb=32), encoder=ENC)
        try:
            prev = m.merge_or_create_state(rng.normal(size=16)).id
            committed.append(prev)
            with pytest.raises(DiskSpaceError) as info:
                for i in range(10_000):
                    hit = m.merge_or_create_state(rng.normal(size=16))
                    committed.append(hit.id)
                    k = m.add_skill(f"s{i}", "d" * 100_000, [Operation("key", key="enter")])
                    m.upsert_skill_edge(prev, hit.id, k.id, 0.5, 1.0)
                    prev = hit.id
            msg = str(info.value)
            assert "\n" not in msg and "reserve" in msg and "everything committed is kept" in msg
            assert len(committed) > 20  # it did write until the reserve, not refuse at once
        finally:
            m.close()  # closing uses the reserve: the vector flush, the checkpoint
        with Memory.open(path, Config(), read_only=True) as m:
            have = {r["id"] for r in m.cypher("MATCH (s:State) RETURN s.id AS id")}
            assert set(committed) <= have
            assert all(r["status"] == "ok" for r in m.check()), m.check()


def test_a_memory_can_be_created_at_a_mount_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty mount point (a container volume) cannot be renamed onto: filled in place."""
    with small_fs(tmp_path / "fs", 8) as fs:
        with Memory.open(fs, config(reserve_mb=1), encoder=ENC) as m:
            m.merge_or_create_state(np.eye(16)[0])
        with Memory.open(fs, Config(), read_only=True) as m:
            assert m.stats().nodes == 1


def test_play_on_a_full_disk_is_one_line_and_the_memory_checks(tmp_path: Path) -> None:
    with small_fs(tmp_path / "fs", 80) as fs:
        mem = fs / "m"
        play = [sys.executable, "-m", "kgagent.cli.main", "play", "--env", "civgame"]
        play += ["--memory", str(mem), "--quiet", "--steps"]
        first = subprocess.run(play + ["1"], capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr
        with Memory.open(mem, Config(), read_only=True) as m:
            before = m.stats().nodes
        fill(fs, diskspace.reserve_bytes(Config()) - (1 << 20))
        res = subprocess.run(play + ["5"], capture_output=True, text=True, timeout=300)
        assert res.returncode == 1, res.stderr
        errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "below the 64.00 MiB reserve" in errors[0], res.stderr
        assert "Traceback" not in res.stderr
        (fs / "filler").unlink()
        check = CliRunner().invoke(cli, ["memory", "check", "--memory", str(mem)])
        assert check.exit_code == 0, check.output
        with Memory.open(mem, Config(), read_only=True) as m:
            assert m.stats().nodes == before


STUCK = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory, diskspace
    diskspace.INTERRUPT_GRACE_S = 0.5
    diskspace.Watchdog.POLL_S = 0.05
    config = Config()
    config.memory.commit_timeout_s = 1.0
    m = Memory.open(sys.argv[1], config, encoder=EncoderSpec("test:v1", 16, (0.95, 0.88)))
    print(m.merge_or_create_state(np.eye(16)[0]).id, flush=True)
    real = m._db._conn

    class Stuck:  # an engine whose next call never returns (a full disk's durability wait)
        def __getattr__(self, name):
            return getattr(real, name)

        def execute(self, *a, **k):
            time.sleep(3600)

    m._db._conn = Stuck()
    m.merge_or_create_state(np.eye(16)[1])
    print("returned", flush=True)
    """
)


def test_a_stuck_engine_call_ends_the_run_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "m"
    res = subprocess.run(
        [sys.executable, "-c", STUCK, str(path)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 1
    first = res.stdout.split()[0]
    assert "returned" not in res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "did not return within 1 s" in lines[0], res.stderr
    with Memory.open(path, Config(), read_only=True) as m:  # the committed state is there
        assert [r["id"] for r in m.cypher("MATCH (s:State) RETURN s.id AS id")] == [first]


UNGUARDED = textwrap.dedent(
    """
    import sys, json
    import numpy as np
    from kgagent.actions import Operation
    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory, diskspace
    config = Config()
    config.memory.disk_reserve_mb = 0   # no reserve: write until the engine fails
    rng = np.random.default_rng(1)
    m = Memory.open(sys.argv[1], config, encoder=EncoderSpec("test:v1", 16, (0.95, 0.88)))
    prev = m.merge_or_create_state(rng.normal(size=16)).id
    print(json.dumps(prev), flush=True)
    try:
        for i in range(100000):
            hit = m.merge_or_create_state(rng.normal(size=16))
            print(json.dumps(hit.id), flush=True)
            k = m.add_skill(f"s{i}", "d" * 3000, [Operation("key", key="enter")])
            m.upsert_skill_edge(prev, hit.id, k.id, 0.5, 1.0)
            prev = hit.id
    finally:
        m.close()
    """
)


def test_without_a_reserve_the_engine_failure_is_one_line_and_repair_recovers(
    tmp_path: Path,
) -> None:
    """The issue's incident, on purpose: the log is torn by a full disk. The writer
    ends with one line (never a native abort), and `memory check --repair` on a
    copy with space recovers every state that was committed."""
    with small_fs(tmp_path / "fs", 6) as fs:
        res = subprocess.run(
            [sys.executable, "-c", UNGUARDED, str(fs / "m")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 1, res.stderr[-2000:]
        assert "could not write" in res.stderr or "No space left" in res.stderr
        committed = [json.loads(line) for line in res.stdout.split()]
        copy = tmp_path / "copy"
        shutil.copytree(fs / "m", copy)
    rep = CliRunner().invoke(cli, ["memory", "check", "--repair", "--memory", str(copy)])
    assert rep.exit_code == 0, rep.output
    with Memory.open(copy, Config(), read_only=True) as m:
        have = {r["id"] for r in m.cypher("MATCH (s:State) RETURN s.id AS id")}
    # The last printed id may be the step whose commit failed; all before it are kept.
    assert set(committed[:-1]) <= have


TORN = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory
    m = Memory.open(sys.argv[1], Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88)))
    rng = np.random.default_rng(0)
    for i in range(200):
        m.merge_or_create_state(rng.normal(size=16))
    os._exit(0)  # no checkpoint: the states are in the engine's log only
    """
)


def test_repair_sets_aside_a_log_the_engine_cannot_replay_and_keeps_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgagent.memory import repair
    from kgagent.memory.engine import engine_name

    if engine_name(Config().memory.engine) != "ladybug":
        pytest.skip("Kùzu replays a damaged log on every open without a word: nothing to repair")
    made = tmp_path / "made"
    subprocess.run([sys.executable, "-c", TORN, str(made)], check=True)
    wal = made / "graph.db.wal"
    os.truncate(wal, wal.stat().st_size // 5)  # a short write cut the log
    with pytest.raises(MemoryStoreError, match="damaged"):
        Memory.open(made, Config(), read_only=True)

    def files(p: Path) -> dict[str, bytes]:
        return {n: (p / n).read_bytes() for n in ("graph.db", "graph.db.wal", "manifest.json")}

    before = files(made)
    # Neither the replay (the engine crashes on the log at some offsets) nor an open
    # without the log works: one line, and the memory is as it was.
    path = tmp_path / "neither"
    shutil.copytree(made, path)
    monkeypatch.setattr(repair, "_CHILD", "import os; os.abort()")
    monkeypatch.setattr(repair, "_PROBE", "import sys; sys.exit('refused')")
    with pytest.raises(MemoryStoreError, match=r"with its log .*crashed.*signal 6.*as it was"):
        repair.repair(path, Config(), lambda _: None)
    assert files(path) == before
    (backup,) = (path / "backups").glob("*-wal")
    assert files(backup) == before
    # The replay crashes, the graph opens without the log: the log is kept aside, the
    # memory opens at its last checkpoint, and one line says what was lost.
    path = tmp_path / "aside"
    shutil.copytree(made, path)
    monkeypatch.undo()
    monkeypatch.setattr(repair, "_CHILD", "import os; os.abort()")
    said: list[str] = []
    repair.repair(path, Config(), said.append)
    (backup,) = (path / "backups").glob("*-wal")
    assert files(backup) == before and not (path / "graph.db.wal").exists()
    assert any(
        f"{backup / 'graph.db.wal'}" in s and "after that checkpoint are lost" in s for s in said
    ), said
    with Memory.open(path, Config(), read_only=True) as m:
        assert all(r["status"] == "ok" for r in m.check())
    # The replay works: the transactions before the damage are kept.
    monkeypatch.undo()
    said = []
    repair.repair(made, Config(), said.append)
    assert any("up to its damaged record" in s for s in said)
    with Memory.open(made, Config(), read_only=True) as m:
        assert 0 < m.stats().nodes < 200
        assert all(r["status"] == "ok" for r in m.check())


def _damaged_in_the_middle(path: Path) -> Path:
    """A memory whose writer died with 200 states in its log, 64 bytes of which, in the
    middle, are then overwritten."""
    subprocess.run([sys.executable, "-c", TORN, str(path)], check=True)
    wal = path / "graph.db.wal"
    with open(wal, "r+b") as f:
        f.seek(wal.stat().st_size // 2)
        f.write(np.random.default_rng(7).integers(0, 256, 64, dtype=np.uint8).tobytes())
    return path


def test_repair_of_a_log_damaged_in_the_middle_ends_with_a_memory_that_opens(
    tmp_path: Path,
) -> None:
    """64 bytes in the middle of the log overwritten: LadybugDB fails an assertion
    (types.cpp) and Kùzu crashes opening it. `check --repair` keeps a copy, then
    replays the log up to the damage or sets it aside, and the memory opens."""
    from kgagent.memory.engine import engine_name

    path = _damaged_in_the_middle(tmp_path / "m")
    wal = path / "graph.db.wal"
    damaged = wal.read_bytes()
    rep = CliRunner().invoke(cli, ["memory", "check", "--repair", "--memory", str(path)])
    assert rep.exit_code == 0 and "Traceback" not in rep.output, rep.output
    (backup,) = (path / "backups").glob("*-wal")
    assert (backup / "graph.db.wal").read_bytes() == damaged
    assert f"a copy of the graph and its log is in {backup}" in rep.output
    with Memory.open(path, Config(), read_only=True) as m:
        states = m.cypher("MATCH (s:State) RETURN count(s) AS n")[0]["n"]
        assert all(r["status"] == "ok" for r in m.check())
    if engine_name(Config().memory.engine) == "ladybug":
        assert "up to its damaged record" in rep.output and 0 < states < 200
    else:
        assert "after that checkpoint are lost" in rep.output and states < 200


def test_a_log_damaged_in_the_middle_is_one_line_pointing_at_repair_not_a_crash(
    tmp_path: Path,
) -> None:
    """Kùzu crashes (SIGSEGV) opening such a log and LadybugDB fails an assertion: every
    command but --repair says in one line what happened and how to repair it, and leaves
    the memory as it was."""
    path = _damaged_in_the_middle(tmp_path / "m")
    before = {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}
    for args in (["memory", "info"], ["memory", "check"]):
        res = subprocess.run(
            [sys.executable, "-m", "kgagent.cli.main", *args, "--memory", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 1, (args, res.returncode, res.stderr[-500:])
        (line,) = res.stderr.strip().splitlines()[-1:]
        assert line.startswith("error: ") and "Traceback" not in res.stderr, res.stderr[-500:]
        assert f"kgagent memory check --repair --memory {path}" in line, line
    assert {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()} == before


def test_repair_without_room_for_its_copy_is_one_line_and_changes_nothing(
    tmp_path: Path,
) -> None:
    """`check --repair` keeps a copy of the damaged log and replays it, which grows the
    graph: on a disk with room for the copy alone it says so before it writes (it filled
    the disk, ended in LanceDB's traceback and left an empty backups folder)."""
    from kgagent.memory.diskspace import free_bytes
    from kgagent.memory.engine import engine_name

    if engine_name(Config().memory.engine) != "ladybug":
        pytest.skip("Kùzu replays a damaged log on every open without a word: nothing to repair")
    made = tmp_path / "made"
    subprocess.run([sys.executable, "-c", TORN, str(made)], check=True)
    wal = made / "graph.db.wal"
    os.truncate(wal, wal.stat().st_size // 5)
    with small_fs(tmp_path / "fs", 48) as fs:
        path = fs / "m"
        shutil.copytree(made, path)
        copy = sum((path / n).stat().st_size for n in ("graph.db", "graph.db.wal", "manifest.json"))
        with open(fs / "filler", "wb") as f:  # room for the copy and half a MiB
            f.write(b"\0" * (free_bytes(fs) - copy - (1 << 19)))
        before = {
            p.name: p.read_bytes()
            for p in path.iterdir()
            if p.is_file() and p.name != "writer.lock"
        }
        rep = CliRunner().invoke(cli, ["memory", "check", "--repair", "--memory", str(path)])
        assert rep.exit_code == 1 and "Traceback" not in rep.output, rep.output
        assert "nothing was changed" in rep.output and "Free some space" in rep.output
        assert {
            p.name: p.read_bytes()
            for p in path.iterdir()
            if p.is_file() and p.name != "writer.lock"
        } == before
        assert not (path / "backups").exists()
