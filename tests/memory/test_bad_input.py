"""Hand-edited manifests, archives with bad values, archives that unpack too far:
each is refused in one line, before anything at the target is written."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kgagent.config import Config
from kgagent.errors import ArchiveError, EncoderMismatchError, KGAgentError, MemoryStoreError
from kgagent.memory import EncoderSpec, Memory, archive_verify
from kgagent.memory.archive import export_memory, import_memory
from kgagent.memory.engine import engine_name
from kgagent.memory.files import BlobStore, write_manifest
from kgagent.memory.lifecycle import lost_vectors

from .conftest import ENC, populate, tree_hash


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad")
    populate(d / "src")
    out = d / "good.kgmem.tar.gz"
    export_memory(d / "src", out)
    return out


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}


def pack(files: dict[str, bytes], out: Path, *, sums: bool = True) -> Path:
    files = dict(files)
    if sums:
        files.pop("SHA256SUMS", None)
        text = "".join(f"{hashlib.sha256(b).hexdigest()}  {n}\n" for n, b in files.items())
        files["SHA256SUMS"] = text.encode()
    with tarfile.open(out, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def edit_json(files: dict[str, bytes], name: str, fn: Callable[[dict], None]) -> None:
    data = json.loads(files[name])
    fn(data)
    files[name] = json.dumps(data).encode()


def edit_table(files: dict[str, bytes], member: str, column: str, value: object) -> None:
    tab = pq.read_table(io.BytesIO(files[member]))
    col = tab.column_names.index(column)
    tab = tab.set_column(col, column, [[value] * tab.num_rows])
    buf = io.BytesIO()
    pq.write_table(tab, buf)
    files[member] = buf.getvalue()


def both(key: str, fn: Callable[[dict], None]) -> Callable[[dict[str, bytes]], None]:
    """Apply ``fn`` to the encoder in archive.json and manifest.json alike."""

    def edit(files: dict[str, bytes]) -> None:
        for name in ("archive.json", "manifest.json"):
            edit_json(files, name, lambda d: fn(d[key]))

    return edit


BAD_ARCHIVES: dict[str, Callable[[dict[str, bytes]], None]] = {
    "encoder dim as a string": both("encoder", lambda e: e.update(dim="16")),
    "encoder without thresholds": both("encoder", lambda e: e.pop("thresholds")),
    "created not a date": lambda f: edit_json(
        f, "manifest.json", lambda d: d.update(created="yesterday")
    ),
    "schema_version not a number": lambda f: edit_json(
        f, "manifest.json", lambda d: d.update(schema_version="abc")
    ),
    "garbage perceptual hash": lambda f: edit_table(
        f, "graph/nodes/Object.parquet", "phash", "not-a-hash!"
    ),
    "skill operations not JSON": lambda f: edit_table(
        f, "graph/nodes/Skill.parquet", "operations", "{not json"
    ),
    "a negative visit count": lambda f: edit_table(f, "graph/nodes/State.parquet", "visits", -5),
    "a negative edge count": lambda f: edit_table(f, "graph/rels/SKILL_EDGE.parquet", "count", -1),
    "a NaN edge weight": lambda f: edit_table(
        f, "graph/rels/SKILL_EDGE.parquet", "weight", float("nan")
    ),
    "table columns not a list": lambda f: edit_json(
        f, "archive.json", lambda d: d["tables"]["State"].update(columns="id")
    ),
    "archive.json nested too deep": lambda f: f.update({"archive.json": b"[" * 100_000}),
    "SHA256SUMS not text": lambda f: f.update({"SHA256SUMS": b"\xff\xfe"}),
}


@pytest.mark.parametrize("case", sorted(BAD_ARCHIVES))
def test_archives_with_bad_values_are_refused(archive: Path, tmp_path: Path, case: str) -> None:
    files = members(archive)
    BAD_ARCHIVES[case](files)
    bad = pack(files, tmp_path / "bad.tar.gz", sums=case != "SHA256SUMS not text")
    target = tmp_path / "target"
    with pytest.raises(KGAgentError) as info:
        import_memory(bad, target)
    assert "\n" not in str(info.value), str(info.value)
    if case.startswith("a negative"):
        assert "not a count of 0 or more" in str(info.value)
    assert not target.exists()
    assert not list(tmp_path.glob(".target.*"))


def test_a_truncated_gzip_trailer_is_refused(archive: Path, tmp_path: Path) -> None:
    data = archive.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[:-8])  # the gzip trailer: CRC-32 and size
    with pytest.raises(ArchiveError, match="corrupt or truncated"):
        import_memory(cut, tmp_path / "t")
    assert not (tmp_path / "t").exists()


def test_a_2_gib_blob_is_refused_before_a_byte_is_written(archive: Path, tmp_path: Path) -> None:
    """The tar header claims 2 GiB: refused on the header, before any of it is unpacked."""
    blob = "ab" + "0" * 62
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo(f"blobs/ab/{blob}.png")
        info.size = 2 << 30
        tar.addfile(info)  # header only: the claimed body never follows
    bomb = tmp_path / "blob.tar.gz"
    bomb.write_bytes(gzip.compress(raw.getvalue()))
    with pytest.raises(ArchiveError, match="more than the .* a member of its kind may have"):
        import_memory(bomb, tmp_path / "t")


def test_caps_on_total_count_and_ratio_hold_while_streaming(
    archive: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = members(archive)
    monkeypatch.setattr(archive_verify, "MAX_MEMBERS", 3)
    with pytest.raises(ArchiveError, match="more than 3 members"):
        import_memory(archive, tmp_path / "t1")
    monkeypatch.setattr(archive_verify, "MAX_MEMBERS", 1_000_000)
    monkeypatch.setattr(archive_verify, "MAX_TOTAL_BYTES", 2000)
    with pytest.raises(ArchiveError, match="unpacks to more than 2,000 bytes"):
        import_memory(archive, tmp_path / "t2")
    monkeypatch.setattr(archive_verify, "MAX_TOTAL_BYTES", 1 << 40)
    monkeypatch.setattr(archive_verify, "RATIO_AFTER_BYTES", 1 << 20)
    bomb = {"graph/nodes/Pad.parquet": bytes(16 << 20), **files}
    with pytest.raises(ArchiveError, match="decompression bomb"):
        import_memory(pack(bomb, tmp_path / "bomb.tar.gz"), tmp_path / "t3")
    for t in ("t1", "t2", "t3"):
        assert not (tmp_path / t).exists()
    assert not list(tmp_path.glob(".t*.import-*"))


BAD_MANIFESTS: dict[str, Callable[[dict], None]] = {
    "schema_version abc": lambda d: d.update(schema_version="abc"),
    "encoder without thresholds": lambda d: d["encoder"].pop("thresholds"),
    "encoder dim a string": lambda d: d["encoder"].update(dim="16"),
    "created yesterday": lambda d: d.update(created="yesterday"),
    "engine a number": lambda d: d.update(engine=5),
    "memory_id a path": lambda d: d.update(memory_id="../../etc/passwd"),
    "not JSON at all": None,  # type: ignore[dict-item]
}


@pytest.mark.parametrize("case", sorted(BAD_MANIFESTS))
def test_hand_edited_manifests_are_one_line_and_change_nothing(tmp_path: Path, case: str) -> None:
    path = tmp_path / "m"
    populate(path)
    man = path / "manifest.json"
    if BAD_MANIFESTS[case] is None:
        man.write_text("{ not json")
    else:
        data = json.loads(man.read_text())
        BAD_MANIFESTS[case](data)
        man.write_text(json.dumps(data))
    before = tree_hash(path)
    for read_only in (True, False):
        with pytest.raises(MemoryStoreError) as info:
            Memory.open(path, Config(), read_only=read_only, create=False)
        assert "\n" not in str(info.value) and "manifest" in str(info.value)
    assert tree_hash(path) == before


def test_refused_opens_write_nothing_not_even_a_memory_id(tmp_path: Path) -> None:
    path = tmp_path / "m"
    populate(path)
    man = path / "manifest.json"
    data = json.loads(man.read_text())
    data.pop("memory_id")  # a memory from before memory ids
    man.write_text(json.dumps(data))
    before = tree_hash(path)
    with pytest.raises(EncoderMismatchError):
        Memory.open(path, Config(), encoder=EncoderSpec("other:v1", 16, (0.95, 0.88)))
    low = Config()
    low = replace(low, memory=replace(low.memory, theta_merge=0.5))  # below the encoder's θ_simi
    with pytest.raises(MemoryStoreError, match="memory.theta_merge = 0.5 must be above"):
        Memory.open(path, low, encoder=ENC)
    assert tree_hash(path) == before
    with Memory.open(path, Config(), encoder=ENC) as m:  # a good open records the id
        assert m.manifest["memory_id"]


def test_blob_hash_is_read_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgagent.memory import files

    store = BlobStore(tmp_path / "blobs")
    data = bytes(range(256)) * 5000
    blob = store.put_bytes(data)
    monkeypatch.setattr(files, "HASH_CHUNK", 4096)
    assert store.sha256(blob) == hashlib.sha256(data).hexdigest() == blob


def test_rows_written_by_hand_are_reported_not_a_traceback(tmp_path: Path) -> None:
    """`kgagent query --write` can create rows the agent never would."""
    path = tmp_path / "m"
    populate(path)
    with Memory.open(path, Config(), encoder=ENC) as m:
        m.cypher("CREATE (:State {id: 's-by-hand'})", write=True)
    with Memory.open(path, Config(), read_only=True) as m:
        rows = {r["check"]: r for r in m.check()}
        assert rows["states_without_vector"]["count"] == 1
    with Memory.open(path, Config(), encoder=ENC) as m:  # a writer opens it too, and says
        assert m.notes == [lost_vectors(path, 1)]
        assert "1 state(s) of" in m.notes[0] and "an export" in m.notes[0]
    with Memory.open(path, Config(), encoder=ENC) as m:
        m.cypher("CREATE (:Object {id: 'o-by-hand'})", write=True)
    with pytest.raises(MemoryStoreError, match="cannot read.*--write"):
        Memory.open(path, Config(), encoder=ENC)


@pytest.mark.parametrize(
    "overrides, thetas, message",
    [
        (
            {"theta_merge": 0.6},
            (0.6, 0.7),
            "memory.theta_merge = 0.6 must be above memory.theta_simi, which is 0.7 (the default "
            "of encoder pix:v1; memory.theta_simi is not set): set memory.theta_simi below 0.6 "
            "too, or memory.theta_merge above 0.7",
        ),
        (
            {"theta_simi": 0.9},
            (0.8, 0.9),
            "memory.theta_simi = 0.9 must be below memory.theta_merge, which is 0.8 (the default "
            "of encoder pix:v1; memory.theta_merge is not set): set memory.theta_merge above 0.9 "
            "too, or memory.theta_simi below 0.8",
        ),
    ],
)
def test_a_theta_clash_names_the_fields_and_creates_nothing(
    tmp_path: Path, overrides, thetas, message
) -> None:
    """Against the encoder's default: refused before the memory is created (a half-made one,
    a manifest without a database, could then not be read)."""
    spec = EncoderSpec("pix:v1", 16, (0.8, 0.7))
    cfg = Config()
    cfg = replace(cfg, memory=replace(cfg.memory, **overrides))
    fresh = tmp_path / "fresh"
    with pytest.raises(MemoryStoreError) as info:
        Memory.open(fresh, cfg, encoder=spec)
    assert str(info.value) == message
    assert list(tmp_path.iterdir()) == []  # no memory, no staging directory
    with Memory.open(fresh, Config(), encoder=spec):
        pass
    with Memory.open(fresh, cfg, read_only=True) as m:  # a reader merges no state: no refusal
        assert (m.theta_merge, m.theta_simi) == thetas


def test_a_memory_whose_creation_did_not_finish_says_so_read_only(tmp_path: Path) -> None:
    path = tmp_path / "half"
    path.mkdir()
    engine = engine_name(Config().memory.engine)  # KGAGENT_ENGINE's when set
    write_manifest(path, {"schema_version": 0, "encoder": None, "engine": engine})
    with pytest.raises(MemoryStoreError, match="has no graph database yet") as info:
        Memory.open(path, Config(), read_only=True)
    assert "\n" not in str(info.value) and "memory info --migrate" in str(info.value)
    with Memory.open(path, Config(), encoder=ENC) as m:  # a writer finishes it
        assert m.manifest["schema_version"] > 0
    with Memory.open(path, Config(), read_only=True) as m:
        assert m.stats().nodes == 0
