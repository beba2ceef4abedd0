"""Export / import: round trip, and every refusal leaves the target untouched."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from kgagent.config import Config
from kgagent.errors import ArchiveError, EncoderMismatchError, SchemaVersionError
from kgagent.memory import Memory, queries
from kgagent.memory.archive import SUMS, export_memory, import_memory, inspect_archive
from kgagent.memory.engine import engine_name
from kgagent.memory.lifecycle import GRAPH

from .conftest import Populated, populate, tree_hash


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> tuple[Populated, Path]:
    base = tmp_path_factory.mktemp("source")
    pop = populate(base / "populated")
    out = base / "mem.kgmem.tar.gz"
    export_memory(pop.path, out)
    return pop, out


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("template") / "memory"
    populate(p)
    return p


@pytest.fixture
def exported(source, tmp_path: Path) -> tuple[Populated, Path]:
    """The populated memory and its archive (copied: tests may tamper with it)."""
    pop, archive = source
    (tmp_path / "out").mkdir()
    copy = tmp_path / "out" / archive.name
    shutil.copy2(archive, copy)
    return pop, copy


@pytest.fixture
def target(template: Path, tmp_path: Path) -> Path:
    """An existing memory that failed imports (even with --force) must leave as it was."""
    p = tmp_path / "target"
    shutil.copytree(template, p)
    return p


def read_members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def write_archive(
    path: Path,
    members: dict[str, bytes],
    *,
    resum: bool = True,
    extra: list[tarfile.TarInfo] = (),
    again: tuple[str, ...] = (),
) -> Path:
    """A gzipped tar of ``members`` (with fresh checksums unless not ``resum``), the
    members named in ``again`` a second time, then the ``extra`` members."""
    members = dict(members)
    if resum:
        members[SUMS] = "".join(
            f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in members.items() if n != SUMS
        ).encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, data in [*members.items(), *((n, members[n]) for n in again)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info, io.BytesIO(b"x" * info.size) if info.isreg() else None)
    return path


def fill_params(q, data: dict[str, list]) -> list[dict]:
    """Parameter sets for a named query from the memory's own ids (None: cannot fill)."""
    sets: list[dict] = [{}]
    for p in q.params:
        values = data.get(p)
        if values is None:
            return []
        sets = [dict(s, **{p: v}) for s in sets for v in values]
    return sets[:60]


def snapshot(path: Path, pop: Populated) -> dict:
    s = pop.states
    edges = [("A", "C", "k1"), ("A", "D", "k2"), ("B", "D", "k2")]
    data = {
        "state": [*s.values(), "s-missing"],
        "skill": list(pop.skills.values()),
        "cluster": [pop.cluster],
        "object": pop.objects,
        "limit": [100],
        "c": [0.5],
        "a": [s["A"]],
        "b": [s["B"]],
    }
    out: dict = {}
    with Memory.open(path, Config(), read_only=True) as m:
        ran = 0
        for q in queries.load_all().values():
            if q.writes:
                continue
            if set(q.params) == {"src", "dst", "skill"}:
                sets = [{"src": s[a], "dst": s[b], "skill": pop.skills[k]} for a, b, k in edges]
            else:
                sets = fill_params(q, data)
            for params in sets:
                rows = m.cypher(q.text, params)
                if q.name == "migrations_applied":  # applied again, at import time
                    rows = [{k: v for k, v in r.items() if k != "applied_at"} for r in rows]
                if "ORDER BY" not in q.text.upper():
                    rows = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
                out[(q.name, json.dumps(params, sort_keys=True))] = rows
                ran += 1
        out["stats"] = m.stats()
        out["vectors"] = {sid: m.state_feature(sid).tolist() for sid in s.values()}
        out["blobs"] = {b: m.blobs.get_bytes(b) for b in m.blobs.all_ids()}
        out["ran"] = ran
    return out


def test_round_trip_every_named_query(exported, tmp_path: Path) -> None:
    pop, archive = exported
    dest = tmp_path / "elsewhere" / "copy"
    summary = import_memory(archive, dest)
    assert summary["nodes"] == 5 and summary["vectors"] == 5 and not summary["replaced"]
    before, after = snapshot(pop.path, pop), snapshot(dest, pop)
    assert before["ran"] > 25  # the comparison really covered the named queries
    # Every read-only named query ran (the data fills every parameter they take).
    names = {k[0] for k in before if isinstance(k, tuple)}
    readable = {n for n, q in queries.load_all().items() if not q.writes}
    assert readable == names, readable - names
    assert after == before
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".")]  # no temp left
    with Memory.open(dest, Config()) as m:
        assert m.consistency == {
            "orphan_rows": 0,
            "uncommitted_revisions": 0,
            "missing_vectors": 0,
            "journal_torn_bytes": 0,
            "rows_removed": 0,
        }
        assert m.manifest["encoder"]["identity"] == "test:v1"


def test_archive_layout_and_checksums(exported) -> None:
    _, archive = exported
    members = read_members(archive)
    meta = inspect_archive(archive)
    assert meta["format"] == "kgagent-archive" and meta["tables"]["State"]["rows"] == 5
    lines = members[SUMS].decode().splitlines()
    assert {ln.split("  ", 1)[1] for ln in lines} == set(members) - {SUMS}
    assert "graph/nodes/State.parquet" in members and "graph/rels/SKILL_EDGE.parquet" in members
    assert "vectors/states.parquet" in members
    assert any(n.startswith("blobs/") for n in members)


def test_force_replaces_existing_memory(exported, target: Path) -> None:
    pop, archive = exported
    with pytest.raises(ArchiveError, match="--force"):
        import_memory(archive, target)
    summary = import_memory(archive, target, force=True)
    assert summary["replaced"]
    with Memory.open(target, Config(), read_only=True) as m:
        assert {r["id"] for r in m._q("state_revisions")} == set(pop.states.values())
    assert sorted(p.name for p in target.parent.iterdir()) == ["out", "target"]


def test_force_keeps_what_the_user_kept_in_the_memorys_directory(exported, target: Path) -> None:
    _, archive = exported
    (target / "runs").mkdir()
    (target / "runs" / "r1.jsonl").write_text('{"type": "run"}\n')
    (target / "backups" / "mine").mkdir(parents=True)
    (target / "notes.txt").write_text("precious")
    inside = target / "self.tar.gz"
    shutil.copy2(archive, inside)  # the archive imported lives in the memory it replaces
    (target / (GRAPH + ".wal")).write_bytes(b"the old database's")
    said: list[str] = []
    summary = import_memory(inside, target, force=True, progress=said.append)
    # said, since `runs list` will show the replaced memory's runs
    kept = ["backups/", "notes.txt", "runs/", "self.tar.gz"]
    assert summary["kept"] == kept
    assert f"kept what the replaced memory's directory held beside it: {', '.join(kept)}" in said
    assert (target / "runs" / "r1.jsonl").read_text() == '{"type": "run"}\n'
    assert (target / "backups" / "mine").is_dir() and (
        target / "notes.txt"
    ).read_text() == "precious"
    assert inside.read_bytes() == archive.read_bytes()
    assert not (target / (GRAPH + ".wal")).exists()  # the store's own: replaced, not kept
    with Memory.open(target, Config(), read_only=True) as m:
        assert m.stats().nodes == 5


def test_export_never_replaces_what_is_not_a_regular_file(source, tmp_path: Path) -> None:
    """``--force`` renames the archive over OUT: over a device or a pipe that would put a
    file where /dev/null was. A directory (``.``, what an empty name becomes) is named
    before ``--force``'s advice, which would not help."""
    pop, _ = source
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ArchiveError, match="not a regular file"):
        export_memory(pop.path, fifo, force=True)
    assert fifo.is_fifo()
    assert not [p for p in tmp_path.iterdir() if p.name != "pipe"]  # no temporary left
    with pytest.raises(ArchiveError, match=r"is a directory; give a file name"):
        export_memory(pop.path, Path(""))


def test_export_refuses_a_name_that_promises_another_kind_of_archive(source, tmp_path) -> None:
    """``memory export backup.zip`` wrote a gzip tar under that name: unzip and the
    desktop's archive tools then failed on the user's backup. Names of other kinds are
    refused before anything is written; any other name is the user's choice."""
    pop, _ = source
    for name in ("backup.zip", "backup.TAR", "b.tar.xz", "b.7z"):
        with pytest.raises(ArchiveError, match=r"is a gzip-compressed tar, not .*\.tar\.gz"):
            export_memory(pop.path, tmp_path / name)
    assert not list(tmp_path.iterdir())
    for name in ("b.tgz", "b.kgmem.tar.gz", "nightly-backup"):
        export_memory(pop.path, tmp_path / name)
        assert tarfile.is_tarfile(tmp_path / name)


def test_export_refuses_a_memory_whose_blobs_are_missing(template: Path, tmp_path: Path) -> None:
    """A memory copied without some of its blobs (an rsync of a running agent) exported
    without a word, and import refused the archive: a backup that could not be restored."""
    mem = tmp_path / "copy"
    shutil.copytree(template, mem)
    gone = sorted((mem / "blobs").glob("??/*.png"))[0]
    gone.unlink()
    out = tmp_path / "backup.kgmem.tar.gz"
    with pytest.raises(ArchiveError) as e:
        export_memory(mem, out)
    assert str(e.value).startswith(f"the memory lacks 1 blob(s) its graph names (e.g. {gone.stem}")
    assert "could not be imported" in str(e.value)
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["copy"]


def _corrupt(a: Path, d: Path) -> Path:
    p = d / "corrupt.tar.gz"
    data = bytearray(a.read_bytes())
    rng = np.random.default_rng(0)
    for i in rng.integers(100, len(data) - 100, size=40):
        data[i] ^= 0xFF
    p.write_bytes(bytes(data))
    return p


def _truncated(a: Path, d: Path) -> Path:
    p = d / "truncated.tar.gz"
    p.write_bytes(a.read_bytes()[: a.stat().st_size // 2])
    return p


def _garbage(a: Path, d: Path) -> Path:
    p = d / "garbage.tar.gz"
    p.write_bytes(os.urandom(4096))
    return p


def _tampered(a: Path, d: Path) -> Path:
    m = read_members(a)
    m["manifest.json"] = m["manifest.json"].replace(b"test:v1", b"test:v9")
    return write_archive(d / "tampered.tar.gz", m, resum=False)


def _traversal(a: Path, d: Path) -> Path:
    return write_archive(d / "traversal.tar.gz", {**read_members(a), "blobs/../../evil.png": b"x"})


def _absolute(a: Path, d: Path) -> Path:
    return write_archive(d / "absolute.tar.gz", {**read_members(a), "/tmp/evil.png": b"x"})


def _symlink(a: Path, d: Path) -> Path:
    link = tarfile.TarInfo("graph/nodes/Evil.parquet")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return write_archive(d / "symlink.tar.gz", read_members(a), extra=[link])


def _hardlink(a: Path, d: Path) -> Path:
    link = tarfile.TarInfo("graph/nodes/Evil.parquet")
    link.type, link.linkname = tarfile.LNKTYPE, "manifest.json"
    return write_archive(d / "hardlink.tar.gz", read_members(a), extra=[link])


def _device(a: Path, d: Path) -> Path:
    dev = tarfile.TarInfo("graph/nodes/Dev.parquet")
    dev.type = tarfile.CHRTYPE
    return write_archive(d / "device.tar.gz", read_members(a), extra=[dev])


def _duplicate(a: Path, d: Path) -> Path:
    """A member given twice with the same bytes: every checksum holds, and an extraction
    would write that file twice (a later copy replacing the one that was checked)."""
    return write_archive(d / "duplicate.tar.gz", read_members(a), again=("manifest.json",))


def _unknown(a: Path, d: Path) -> Path:
    return write_archive(d / "unknown.tar.gz", {**read_members(a), "notes.txt": b"hello"})


def _missing(a: Path, d: Path) -> Path:
    m = read_members(a)
    del m["vectors/states.parquet"]
    return write_archive(d / "missing.tar.gz", m, resum=False)


def _bad_blob(a: Path, d: Path) -> Path:
    m = read_members(a)
    name = next(n for n in m if n.startswith("blobs/"))
    m[name] = m[name] + b"\0"
    return write_archive(d / "badblob.tar.gz", m)  # checksums recomputed: the name catches it


def _vectors_mismatch(a: Path, d: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    m = read_members(a)
    tab = pq.read_table(io.BytesIO(m["vectors/states.parquet"]))
    tab = tab.set_column(1, "rev", pa.array([7] * tab.num_rows, pa.int64()))
    buf = io.BytesIO()
    pq.write_table(tab, buf)
    m["vectors/states.parquet"] = buf.getvalue()
    return write_archive(d / "vectors.tar.gz", m)


def _newer_schema(a: Path, d: Path) -> Path:
    m = read_members(a)
    for name in ("manifest.json", "archive.json"):
        doc = json.loads(m[name])
        doc["schema_version"] = 99
        m[name] = json.dumps(doc).encode()
    return write_archive(d / "newer.tar.gz", m)


def _edited(a: Path, d: Path, name: str, **change: object) -> Path:
    """The archive with fields of one JSON member changed (None: removed), resummed."""
    m = read_members(a)
    doc = json.loads(m[name])
    for key, value in change.items():
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    m[name] = json.dumps(doc).encode()
    return write_archive(d / "edited.tar.gz", m)


def _foreign_manifest(a: Path, d: Path) -> Path:
    return _edited(a, d, "manifest.json", format="evil")


def _foreign_archive(a: Path, d: Path) -> Path:
    return _edited(a, d, "archive.json", format="evil")


def _unknown_format_version(a: Path, d: Path) -> Path:
    return _edited(a, d, "archive.json", format_version=0)


def _newer_format_version(a: Path, d: Path) -> Path:
    return _edited(a, d, "archive.json", format_version=2)


def _unidentified(a: Path, d: Path) -> Path:
    return _edited(a, d, "manifest.json", memory_id=None, created=None)


CASES = [
    (_corrupt, ArchiveError, "corrupt or truncated|checksum|not valid|Parquet"),
    (_truncated, ArchiveError, "corrupt or truncated"),
    (_garbage, ArchiveError, "corrupt or truncated"),
    (_tampered, ArchiveError, "checksum mismatch for manifest.json"),
    (_traversal, ArchiveError, r"climbs out"),
    (_absolute, ArchiveError, "absolute path"),
    (_symlink, ArchiveError, "is a link"),
    (_hardlink, ArchiveError, "is a link"),
    (_device, ArchiveError, "not a regular file"),
    (_duplicate, ArchiveError, "archive member 'manifest.json' appears twice"),
    (_unknown, ArchiveError, "unknown archive member 'notes.txt'"),
    (_missing, ArchiveError, "missing member"),
    (_bad_blob, ArchiveError, "does not hash to its name"),
    (_vectors_mismatch, ArchiveError, "vectors do not match its states"),
    (_newer_schema, SchemaVersionError, "newer than this kgagent"),
    (_foreign_manifest, ArchiveError, "manifest.json format is 'evil', expected 'kgagent-memory'"),
    (_foreign_archive, ArchiveError, "archive.json format is 'evil', expected 'kgagent-archive'"),
    (_unknown_format_version, ArchiveError, "format_version is 0, expected a whole number"),
    (_newer_format_version, ArchiveError, "is 2, .*made by a newer kgagent; upgrade"),
    (_unidentified, ArchiveError, "neither memory_id nor created"),
]


@pytest.mark.parametrize("make,error,message", CASES, ids=[c[0].__name__[1:] for c in CASES])
def test_bad_archive_refused_target_unchanged(exported, target, tmp_path, make, error, message):
    _, archive = exported
    bad = make(archive, tmp_path / "out")
    before = tree_hash(target)
    with pytest.raises(error, match=message) as info:
        import_memory(bad, target, force=True)
    assert "\n" not in str(info.value)
    assert tree_hash(target) == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["out", "target"]
    assert not (tmp_path / "evil.png").exists()


def test_wrong_encoder_and_existing_target_refused(exported, target, tmp_path) -> None:
    _, archive = exported
    before = tree_hash(target)
    with pytest.raises(EncoderMismatchError, match="test:v1, not clip:ViT-B-32"):
        import_memory(archive, target, force=True, expect_encoder="clip:ViT-B-32")
    with pytest.raises(ArchiveError, match="already holds a memory; pass --force"):
        import_memory(archive, target)
    assert tree_hash(target) == before
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "keep.txt").write_text("mine")
    with pytest.raises(ArchiveError, match="not a kgagent memory"):
        import_memory(archive, junk, force=True)
    assert [p.name for p in junk.iterdir()] == ["keep.txt"]
    # The right encoder is accepted.
    out = import_memory(archive, tmp_path / "ok", expect_encoder="test:v1")
    assert out["encoder"] == "test:v1"


def test_a_target_it_may_not_write_is_refused_before_any_work(
    exported, target, tmp_path, monkeypatch
) -> None:
    """A memory without --force, a non-empty directory that is not a memory, or a file:
    refused in one line before the archive is read (even when there is none) and before
    anything is written next to the target, the target as it was."""
    from kgagent.memory import staging

    def no_staging(*_a: object) -> None:
        raise AssertionError("a staging directory was made for a refused target")

    monkeypatch.setattr(staging, "make", no_staging)
    _, archive = exported
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "keep.txt").write_text("mine")
    file = tmp_path / "file"
    file.write_text("mine")
    cases = [
        (target, False, "already holds a memory; pass --force"),
        (junk, False, "is not empty and is not a kgagent memory"),
        (junk, True, "is not empty and is not a kgagent memory"),
        (file, False, "exists and is not a directory"),
        (file, True, "exists and is not a directory"),
    ]
    for dest, force, message in cases:
        before = tree_hash(dest) if dest.is_dir() else dest.read_bytes()
        said: list[str] = []
        for source in (archive, tmp_path / "no-such.kgmem.tar.gz"):
            with pytest.raises(ArchiveError, match=message) as e:
                import_memory(source, dest, force=force, progress=said.append)
            assert "\n" not in str(e.value)
        assert said == [], (dest.name, force, said)
        assert (tree_hash(dest) if dest.is_dir() else dest.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "junk", "out", "target"]


def test_cli_refuses_an_existing_memory_in_one_line_before_any_progress(exported, target) -> None:
    from click.testing import CliRunner
    from kgagent.cli.main import cli

    _, archive = exported
    before = tree_hash(target)
    r = CliRunner().invoke(cli, ["memory", "import", str(archive), "--memory", str(target)])
    assert r.exit_code == 1, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "already holds a memory; pass --force" in lines[0], lines
    assert tree_hash(target) == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["out", "target"]


def test_export_refuses_to_overwrite(exported) -> None:
    pop, archive = exported
    size = archive.stat().st_size
    with pytest.raises(ArchiveError, match="--force"):
        export_memory(pop.path, archive)
    assert archive.stat().st_size == size
    summary = export_memory(pop.path, archive, force=True)
    assert summary["rows_State"] == 5 and inspect_archive(archive)["tables"]["State"]["rows"] == 5


def test_archive_moves_between_engines(exported, tmp_path: Path) -> None:
    """The archive is engine-neutral: import it under the other engine (another process)."""
    pop, archive = exported
    other = "kuzu" if engine_name(Config().memory.engine) == "ladybug" else "ladybug"
    code = (
        "import json, sys\n"
        "from kgagent.config import Config\n"
        "from kgagent.memory import Memory\n"
        "from kgagent.memory.archive import import_memory, export_memory\n"
        "import_memory(sys.argv[1], sys.argv[2])\n"
        "m = Memory.open(sys.argv[2], Config(), read_only=True)\n"
        "print(json.dumps({'engine': m.engine, 'stats': m.stats().as_row(),"
        " 'hq': [c.skill_id for c in m.hq_candidates(sys.argv[3])]}))\n"
        "m.close()\n"
        "export_memory(sys.argv[2], sys.argv[4])\n"
    )
    back = tmp_path / "back.tar.gz"
    env = dict(os.environ, KGAGENT_ENGINE=other)
    res = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(archive),
            str(tmp_path / "moved"),
            pop.states["A"],
            str(back),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["engine"] == other and got["stats"] == pop.stats
    assert set(got["hq"]) == {pop.skills["k1"], pop.skills["k2"]}
    # ... and back into this engine, unchanged.
    dest = tmp_path / "home-again"
    import_memory(back, dest)
    assert snapshot(dest, pop) == snapshot(pop.path, pop)


def test_force_through_a_symlink_replaces_the_directory_it_points_to(
    exported, target: Path
) -> None:
    pop, archive = exported
    link = target.parent / "link"
    link.symlink_to(target.name)
    import_memory(archive, link, force=True)
    assert link.is_symlink() and os.readlink(link) == target.name  # the link stays
    with Memory.open(target, Config(), read_only=True) as m:  # the memory behind it is new
        assert {r["id"] for r in m._q("state_revisions")} == set(pop.states.values())
    dangling = target.parent / "dangling"
    dangling.symlink_to("nowhere")
    with pytest.raises(ArchiveError, match="symbolic link to nowhere, which does not exist") as e:
        import_memory(archive, dangling)
    assert "\n" not in str(e.value) and dangling.is_symlink()
    assert not (target.parent / "nowhere").exists()


def test_a_table_the_user_added_is_named_as_theirs_at_export(target: Path, tmp_path: Path) -> None:
    """A table made with `query --write` is not kgagent's: the export says so and how to
    go on (it blamed kgagent's queries/ for being out of date)."""
    from click.testing import CliRunner
    from kgagent.cli.main import cli

    from kgagent.errors import MemoryStoreError

    def query(text: str) -> None:
        r = CliRunner().invoke(cli, ["query", "--memory", str(target), "--write", text])
        assert r.exit_code == 0, r.output

    query("CREATE NODE TABLE Note(id STRING, PRIMARY KEY(id))")
    with pytest.raises(MemoryStoreError) as e:
        export_memory(target, tmp_path / "a.kgmem.tar.gz")
    assert "table Note that is not kgagent's" in str(e.value)
    assert "DROP TABLE Note" in str(e.value) and "out of date" not in str(e.value)
    assert not (tmp_path / "a.kgmem.tar.gz").exists()
    query("DROP TABLE Note")
    export_memory(target, tmp_path / "a.kgmem.tar.gz")
