"""Blobs no graph row names: `memory check` counts them (and their bytes), `--repair`
removes them and only them, never a blob a live writer stored and has yet to commit,
and an export leaves them out. An archive is no more readable than its memory."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.config import Config
from kgagent.errors import MemoryStoreError
from kgagent.memory import Memory
from kgagent.memory.archive import export_memory, import_memory
from kgagent.memory.engine import engine_name
from kgagent.memory.merge import merge_memories
from kgagent.memory.repair import repair

from .conftest import ENC, Populated, e, tree_hash


def rows(path: Path) -> dict[str, dict]:
    with Memory.open(path, Config(), read_only=True) as m:
        return {r["check"]: r for r in m.check()}


def blobs(path: Path) -> set[str]:
    return {p.stem for p in (path / "blobs").glob("??/*.png")}


def named(path: Path) -> set[str]:
    with Memory.open(path, Config(), read_only=True) as m:
        return {r["blob"] for r in m.run_named("check_blob_refs")}


def forget_object(pop: Populated, i: int) -> tuple[str, int]:
    """Delete an object by hand, as `kgagent query --write "… DETACH DELETE o"` does;
    (its crop's blob id, the crop's bytes)."""
    oid = pop.objects[i]
    with Memory.open(pop.path, Config(), encoder=ENC) as m:
        crop = m.get_object(oid).crop_blob
        size = m.blobs.path(crop).stat().st_size
        m.cypher("MATCH (o:Object) WHERE o.id = $o DETACH DELETE o", {"o": oid}, write=True)
    return crop, size


def test_a_deleted_objects_crop_is_counted_then_repaired_away_and_nothing_else(
    populated: Populated,
) -> None:
    before = blobs(populated.path)
    assert before == named(populated.path) and len(before) == 6  # 3 thumbnails, 3 crops
    assert rows(populated.path)["unreferenced_blobs"]["status"] == "ok"
    crop, size = forget_object(populated, 2)
    files = tree_hash(populated.path, skip=("graph.db",))
    row = rows(populated.path)["unreferenced_blobs"]
    assert (row["status"], row["count"]) == ("repairable", 1)
    assert f"({size} bytes)" in row["detail"]
    assert tree_hash(populated.path, skip=("graph.db",)) == files  # a check removes nothing
    Memory.open(populated.path, Config()).close()  # nor does a read-write open
    assert blobs(populated.path) == before
    said: list[str] = []
    repair(populated.path, Config(), said.append)
    assert blobs(populated.path) == before - {crop} == named(populated.path)
    assert said == [f"removed 1 blob(s) no graph row names ({size} bytes)"]
    assert {k: r["status"] for k, r in rows(populated.path).items() if r["status"] != "ok"} == {}
    said.clear()
    repair(populated.path, Config(), said.append)  # nothing more to remove: no line
    assert said == [] and blobs(populated.path) == before - {crop}


def test_the_cli_reports_and_repairs_them(populated: Populated) -> None:
    crop, size = forget_object(populated, 0)
    mem = str(populated.path)
    res = CliRunner().invoke(cli, ["memory", "check", "--memory", mem], prog_name="kgagent")
    assert res.exit_code == 0, res.output  # repairable, not a problem
    line = next(s for s in res.stdout.splitlines() if s.startswith("unreferenced_blobs"))
    assert line.split()[1:3] == ["repairable", "1"] and f"({size} bytes)" in line
    res = CliRunner().invoke(
        cli, ["memory", "check", "--repair", "--memory", mem], prog_name="kgagent"
    )
    assert res.exit_code == 0, res.output
    assert f"removed 1 blob(s) no graph row names ({size} bytes)" in res.stderr
    assert crop not in blobs(populated.path)


WRITER = textwrap.dedent(
    """
    import sys
    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory
    m = Memory.open(sys.argv[1], Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88)))
    print(m.blobs.put_bytes(b"stored, its row not committed yet"), flush=True)
    sys.stdin.readline()
    m.close()
    """
)


@contextmanager
def live_writer(path: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    """A writer in another process that has stored a blob and not yet named it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        blob = proc.stdout.readline().strip()
        assert len(blob) == 64, proc.stderr.read()
        yield proc, blob
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for s in (proc.stdin, proc.stdout, proc.stderr):
            s.close()


def test_a_blob_a_live_writer_has_not_committed_yet_is_never_removed(
    populated: Populated,
) -> None:
    before = blobs(populated.path)
    with live_writer(populated.path) as (_, blob):
        assert blob in blobs(populated.path)
        if engine_name(Config().memory.engine) == "ladybug":  # a reader beside a writer
            row = rows(populated.path)["unreferenced_blobs"]
            assert (row["status"], row["count"]) == ("in flight", 1)
        with pytest.raises(MemoryStoreError, match="in use by another process"):
            repair(populated.path, Config(), lambda _: None)
        assert blob in blobs(populated.path)
    # the writer closed without naming it: now it is nobody's, and goes
    repair(populated.path, Config(), lambda _: None)
    assert blobs(populated.path) == before


def test_an_export_leaves_them_out_and_imports(populated: Populated, tmp_path: Path) -> None:
    crop, _ = forget_object(populated, 1)
    out = tmp_path / "m.kgmem.tar.gz"
    summary = export_memory(populated.path, out)
    with tarfile.open(out) as tar:
        members = {Path(n).stem for n in tar.getnames() if n.startswith("blobs/")}
    assert members == named(populated.path) and crop not in members
    assert (summary["blobs"], summary["blobs_left_out"]) == (5, 1)
    assert list(summary)[-1] == "blobs_left_out"  # last: a script's columns keep their places
    import_memory(out, tmp_path / "copy")
    assert blobs(tmp_path / "copy") == named(populated.path)
    assert all(r["status"] == "ok" for r in rows(tmp_path / "copy").values())


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.parametrize(
    ("mask", "folder", "want"),
    [
        (0o022, 0o700, 0o600),
        (0o022, 0o750, 0o640),
        (0o022, 0o755, 0o644),
        (0o002, 0o770, 0o660),
        (0o077, 0o755, 0o600),
    ],
)
def test_an_archive_is_no_more_readable_than_its_memory(
    populated: Populated, tmp_path: Path, mask: int, folder: int, want: int
) -> None:
    os.chmod(populated.path, folder)
    out = tmp_path / "m.kgmem.tar.gz"
    out.write_bytes(b"an older archive, readable by all")
    os.chmod(out, 0o666)
    with umask(mask):
        export_memory(populated.path, out, force=True)
    assert stat.S_IMODE(out.stat().st_mode) == want


def test_a_merge_into_a_memory_with_such_a_blob_goes_ahead(
    populated: Populated, tmp_path: Path
) -> None:
    """The merged copy's check passes them: they are the destination's, for its repair."""
    crop, _ = forget_object(populated, 2)
    other = tmp_path / "other"
    with Memory.open(other, Config(), encoder=ENC) as m:
        m.merge_or_create_state(e(9))
    merge_memories([other], populated.path)
    assert crop in blobs(populated.path)
    assert rows(populated.path)["unreferenced_blobs"]["count"] == 1
