"""Export a memory to one portable archive file, and import it back (either engine).

The archive is a gzip-compressed tar file (``.tar.gz``; suffix ``.kgmem.tar.gz``
suggested) of regular files only, laid out as::

    archive.json                 format, format version, source engine, schema version,
                                 encoder, and per table: kind, columns, Cypher types, rows
    manifest.json                the memory's manifest (schema version, encoder, times)
    graph/nodes/<Table>.parquet  every node table, columns in schema order
    graph/rels/<Table>.parquet   every rel table: src id, dst id, then the properties
    vectors/states.parquet       id, rev, vector: the committed revision of every state
    blobs/<ab>/<sha256>.png      the content-addressed blobs
    SHA256SUMS                   "<sha256>  <member>" for every other member

The graph is engine-neutral data (Parquet written with pyarrow from named
Cypher queries, ``queries/archive.cypher``), so an archive written under Kùzu
imports under LadybugDB and back: this is the documented way to move a memory
between engines.

Import refuses, with one line and nothing changed at the target: an unreadable
(corrupt, truncated) file; a member that is not a regular file (symlink, hard
link, device, directory), whose path is absolute or climbs out (``..``), or that
is not part of the layout above; a missing or extra member, or a checksum that
differs; a blob whose content does not hash to its name; a schema version newer
than this kgagent; an encoder other than ``expect_encoder``; and an existing
memory at the target unless ``force``. The new memory is built in a temporary
directory next to the target through the normal migrations and bulk loads
(``COPY <Table> FROM $rows``), reopened and checked (every state has exactly its
committed vector), and only then moved into place; with ``force`` the old memory
is kept aside until that move succeeded.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import kgagent
from kgagent.config import Config
from kgagent.errors import (
    ArchiveError,
    EncoderMismatchError,
    MemoryStoreError,
    QueryError,
    SchemaVersionError,
)
from kgagent.memory import migrations, queries
from kgagent.memory.engine import GraphDB, engine_name
from kgagent.memory.files import MANIFEST, read_manifest, write_manifest
from kgagent.memory.vectors import TABLE as VECTOR_TABLE
from kgagent.memory.vectors import VectorStore

ARCHIVE_FORMAT = "kgagent-archive"
ARCHIVE_VERSION = 1
META = "archive.json"
SUMS = "SHA256SUMS"
VECTORS_MEMBER = "vectors/states.parquet"

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_MEMBER = re.compile(
    rf"^(?:{re.escape(META)}|{re.escape(MANIFEST)}|{SUMS}|{re.escape(VECTORS_MEMBER)}"
    rf"|graph/(?:nodes|rels)/{_IDENT}\.parquet|blobs/[0-9a-f]{{2}}/[0-9a-f]{{64}}\.png)$"
)
_BLOB_FILE = re.compile(r"^[0-9a-f]{64}\.png$")

#: Cypher column types ↔ Arrow types (the types the schema uses, and a few more).
_ARROW = {
    "STRING": pa.string(),
    "INT64": pa.int64(),
    "INT32": pa.int32(),
    "INT16": pa.int16(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "BOOL": pa.bool_(),
}

Progress = Callable[[str], None]


def _noop(_msg: str) -> None:
    pass


# ===================================================================== export
def export_memory(
    memory_path: str | Path,
    out: str | Path,
    config: Config | None = None,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Write the memory at ``memory_path`` to the archive file ``out``; returns a summary.

    The memory is opened read-only (LadybugDB allows this while an agent runs);
    all graph rows are read in one read-only transaction, and the vectors chosen
    are exactly the revisions that transaction saw committed.
    """
    from kgagent.memory.store import Memory

    say = progress or _noop
    out = Path(out).expanduser()
    if out.exists() and not force:
        raise ArchiveError(f"{out} exists; pass --force to overwrite it")
    if out.is_dir():
        raise ArchiveError(f"{out} is a directory; give a file name such as memory.kgmem.tar.gz")
    t0 = time.time()
    mem = Memory.open(memory_path, config or Config(), read_only=True, create=False)
    try:
        manifest = dict(mem.manifest)
        db = mem._db
        assert db is not None
        tables = _graph_tables(db)
        payload: dict[str, bytes] = {}
        meta_tables: dict[str, Any] = {}
        db.execute("BEGIN TRANSACTION READ ONLY")
        try:
            state_revs: dict[str, int] = {}
            for name, kind in tables:
                tab, types = _export_table(db, name, kind)
                if name == "State":
                    state_revs = dict(
                        zip(tab.column("id").to_pylist(), tab.column("feature_rev").to_pylist())
                    )
                member = f"graph/{'nodes' if kind == 'NODE' else 'rels'}/{name}.parquet"
                payload[member] = _parquet_bytes(tab)
                meta_tables[name] = {
                    "kind": kind.lower(),
                    "member": member,
                    "columns": tab.column_names,
                    "types": types,
                    "rows": tab.num_rows,
                }
                say(f"graph: {name} {tab.num_rows} rows")
        finally:
            db.execute("COMMIT")
        encoder = manifest.get("encoder")
        vectors = _export_vectors(mem.path, encoder, state_revs)
        payload[VECTORS_MEMBER] = _parquet_bytes(vectors)
        say(f"vectors: {vectors.num_rows} rows")
        blobs = mem.blobs.all_ids()
        blob_dir = mem.blobs.directory
    finally:
        mem.close()

    meta = {
        "format": ARCHIVE_FORMAT,
        "format_version": ARCHIVE_VERSION,
        "kgagent_version": kgagent.__version__,
        "created": time.time(),
        "source_engine": manifest.get("engine"),
        "schema_version": int(manifest.get("schema_version", 0)),
        "encoder": encoder,
        "tables": meta_tables,
        "vectors": vectors.num_rows,
        "blobs": len(blobs),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    os.close(fd)
    sums: list[tuple[str, str]] = []
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:
            head = {
                META: (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode(),
                MANIFEST: (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(),
            }
            for member, data in [*head.items(), *payload.items()]:
                sums.append((hashlib.sha256(data).hexdigest(), member))
                _add_bytes(tar, member, data)
            for i, blob in enumerate(blobs):
                data = (blob_dir / blob[:2] / f"{blob}.png").read_bytes()
                digest = hashlib.sha256(data).hexdigest()
                if digest != blob:
                    raise ArchiveError(
                        f"blob {blob} in {blob_dir} is damaged (its content hashes to {digest}); "
                        "run `kgagent memory check`"
                    )
                member = f"blobs/{blob[:2]}/{blob}.png"
                sums.append((digest, member))
                _add_bytes(tar, member, data)
                if (i + 1) % 1000 == 0:
                    say(f"blobs: {i + 1}/{len(blobs)}")
            text = "".join(f"{h}  {m}\n" for h, m in sums)
            _add_bytes(tar, SUMS, text.encode())
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    summary = {
        "archive": str(out),
        "bytes": out.stat().st_size,
        "seconds": round(time.time() - t0, 2),
        "schema_version": meta["schema_version"],
        "engine": meta["source_engine"],
        "encoder": (encoder or {}).get("identity"),
        "vectors": meta["vectors"],
        "blobs": meta["blobs"],
    }
    for name, t in meta_tables.items():
        summary[f"rows_{name}"] = t["rows"]
    return summary


def _graph_tables(db: GraphDB) -> list[tuple[str, str]]:
    """(name, NODE|REL) of every data table, node tables first; each must have its queries."""
    rows = db.execute(queries.get("archive_tables").text)
    out = []
    for r in rows:
        name, kind = str(r["name"]), str(r["type"]).upper()
        if name == migrations.BOOKKEEPING:
            continue
        if kind not in ("NODE", "REL") or not re.fullmatch(_IDENT, name):
            raise MemoryStoreError(f"cannot export graph table {name!r} of kind {kind}")
        for q in (_export_query(name), _load_query(name)):
            if q not in queries.load_all():
                raise MemoryStoreError(
                    f"table {name} has no named query {q} (queries/archive.cypher is out of date "
                    "with the schema)"
                )
        out.append((name, kind))
    out.sort(key=lambda t: (t[1] != "NODE", t[0]))
    return out


def _export_query(table: str) -> str:
    return f"archive_export_{table.lower()}"


def _load_query(table: str) -> str:
    return f"archive_load_{table.lower()}"


def _table_info(db: GraphDB, table: str) -> list[tuple[str, str]]:
    """(column, Cypher type) in schema order. ``table`` comes from the catalogue
    (``archive_tables``) and is a checked identifier: the one formatted name here,
    because CALL table_info() takes no parameter."""
    if not re.fullmatch(_IDENT, table):
        raise MemoryStoreError(f"not a table name: {table!r}")
    rows = db.execute(f"CALL table_info('{table}') RETURN *")
    return [(str(r["name"]), str(r["type"])) for r in rows]


def _export_table(db: GraphDB, name: str, kind: str) -> tuple[pa.Table, list[str]]:
    info = _table_info(db, name)
    rows = db.execute(queries.get(_export_query(name)).text)
    cols = [c for c, _ in info]
    types = [t for _, t in info]
    if kind == "REL":
        cols = ["src", "dst", *cols]
        types = ["STRING", "STRING", *types]  # every table's primary key is a STRING id
    got = list(rows[0]) if rows else None
    q = queries.get(_export_query(name))
    declared = _returned_columns(q.text)
    if declared != cols or (got is not None and got != cols):
        raise MemoryStoreError(
            f"named query {q.name} returns {declared}, but table {name} has {cols} "
            "(queries/archive.cypher is out of date with the schema)"
        )
    arrays = []
    for c, t in zip(cols, types):
        if t not in _ARROW:
            raise MemoryStoreError(f"cannot export column {name}.{c} of type {t}")
        arrays.append(pa.array([r[c] for r in rows], type=_ARROW[t]))
    return pa.Table.from_arrays(arrays, names=cols), types


def _returned_columns(text: str) -> list[str]:
    """The ``AS alias`` names of a query's RETURN clause, in order."""
    ret = re.split(r"\bRETURN\b", queries.strip_strings(text), flags=re.I)[-1]
    ret = re.split(r"\bORDER\s+BY\b", ret, flags=re.I)[0]
    return re.findall(rf"\bAS\s+({_IDENT})", ret, flags=re.I)


def _vector_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("rev", pa.int64()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def _export_vectors(path: Path, encoder: dict | None, revs: dict[str, int]) -> pa.Table:
    if encoder is None:
        if revs:
            raise ArchiveError(
                "this memory has states but no encoder in its manifest; cannot export"
            )
        return _vector_schema(1).empty_table()
    dim = int(encoder["dim"])
    if not revs:
        return _vector_schema(dim).empty_table()
    store = VectorStore(path / "vectors", dim, read_only=True)
    ids, rv, vecs, _ = store.rows()  # LanceDB rows and the journal's
    pick: dict[str, int] = {}
    for i, (sid, r) in enumerate(zip(ids, rv)):
        if revs.get(sid) == r:
            pick[sid] = i  # a revision seen twice (journal and table) is the same vector
    missing = [s for s in revs if s not in pick]
    if missing:
        raise ArchiveError(
            f"{len(missing)} state(s) have no committed vector (e.g. {missing[0]}); "
            "run `kgagent memory check` (and open the memory read-write once to repair it)"
        )
    order = sorted(pick)
    rows = np.asarray([pick[s] for s in order], dtype=np.int64)
    return pa.Table.from_arrays(
        [
            pa.array(order, pa.string()),
            pa.array(rv[rows], pa.int64()),
            pa.FixedSizeListArray.from_arrays(pa.array(vecs[rows].reshape(-1)), dim).cast(
                pa.list_(pa.float32(), dim)
            ),
        ],
        schema=_vector_schema(dim),
    )


def _parquet_bytes(tab: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(tab, buf, compression="zstd")
    return buf.getvalue()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = int(time.time())
    info.type = tarfile.REGTYPE
    tar.addfile(info, io.BytesIO(data))


# ===================================================================== import
def inspect_archive(archive: str | Path) -> dict[str, Any]:
    """The verified ``archive.json`` of an archive (members, checksums and blobs checked)."""
    archive = Path(archive).expanduser()
    with tempfile.TemporaryDirectory(prefix="kgagent-inspect-") as tmp:
        meta, _manifest = _extract_verified(archive, Path(tmp))
        return meta


def import_memory(
    archive: str | Path,
    target: str | Path,
    config: Config | None = None,
    *,
    force: bool = False,
    expect_encoder: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Import ``archive`` as the memory at ``target``; returns a summary.

    Refuses an existing memory at ``target`` unless ``force``; a non-empty
    directory that is not a kgagent memory is refused even with ``force``.
    """
    say = progress or _noop
    cfg = config or Config()
    archive = Path(archive).expanduser()
    target = Path(target).expanduser()
    t0 = time.time()
    replacing = _check_target(target, force)
    if not archive.is_file():
        raise ArchiveError(f"no archive file at {archive}")
    engine = engine_name(cfg.memory.engine)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.import-", dir=target.parent))
    try:
        staged = work / "archive"
        staged.mkdir()
        meta, manifest = _extract_verified(archive, staged, say)
        version = _check_compatible(meta, manifest, expect_encoder)
        new = work / "memory"
        _build(staged, new, meta, manifest, version, engine, cfg, say)
        summary = _verify_built(new, meta, cfg)
        say("moving the imported memory into place")
        _swap(new, target, replacing, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary.update(
        {
            "memory": str(target),
            "archive": str(archive),
            "engine": engine,
            "source_engine": meta.get("source_engine"),
            "replaced": replacing,
            "seconds": round(time.time() - t0, 2),
        }
    )
    return summary


def _check_target(target: Path, force: bool) -> bool:
    """True when an existing memory will be replaced."""
    if not target.exists():
        return False
    if not target.is_dir():
        raise ArchiveError(f"{target} exists and is not a directory")
    if not any(target.iterdir()):
        return False
    try:
        is_memory = read_manifest(target) is not None
    except MemoryStoreError:
        is_memory = False
    if not is_memory:
        raise ArchiveError(
            f"{target} is not empty and is not a kgagent memory; import into an empty directory"
        )
    if not force:
        raise ArchiveError(
            f"{target} already holds a memory; pass --force to replace it "
            "(the old one is kept until the import has succeeded)"
        )
    return True


def _extract_verified(
    archive: Path, dest: Path, say: Progress = _noop
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Extract every member into ``dest`` after checking it; verify the checksums."""
    digests: dict[str, str] = {}
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for m in _members(tar):
                path = dest.joinpath(*m.name.split("/"))
                if dest.resolve() not in path.resolve().parents:
                    raise ArchiveError(f"archive member {m.name!r} escapes the target; refusing")
                src = tar.extractfile(m)
                if src is None:
                    raise ArchiveError(f"archive member {m.name!r} is not a regular file; refusing")
                path.parent.mkdir(parents=True, exist_ok=True)
                h = hashlib.sha256()
                with src, open(path, "wb") as f:
                    for chunk in iter(lambda s=src: s.read(1 << 20), b""):
                        h.update(chunk)
                        f.write(chunk)
                digests[m.name] = h.hexdigest()
    except ArchiveError:
        raise
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        reason = " ".join(str(e).split()) or e.__class__.__name__
        raise ArchiveError(
            f"{archive} is not a readable kgagent archive (corrupt or truncated: {reason})"
        ) from None
    say(f"read {len(digests)} archive members")
    if SUMS not in digests:
        raise ArchiveError(f"{archive} has no {SUMS} member; not a kgagent archive")
    listed: dict[str, str] = {}
    for n, line in enumerate((dest / SUMS).read_text(encoding="utf-8").splitlines(), 1):
        m = re.fullmatch(r"([0-9a-f]{64})  (\S+)", line)
        if not m or m.group(2) in listed or m.group(2) == SUMS:
            raise ArchiveError(f"{SUMS} line {n} is malformed; the archive is damaged")
        listed[m.group(2)] = m.group(1)
    present = set(digests) - {SUMS}
    if set(listed) != present:
        extra = sorted(present - set(listed))
        lost = sorted(set(listed) - present)
        what = f"unlisted member {extra[0]!r}" if extra else f"missing member {lost[0]!r}"
        raise ArchiveError(f"the archive does not match its {SUMS} ({what}); refusing")
    for name in sorted(present):
        if digests[name] != listed[name]:
            raise ArchiveError(
                f"checksum mismatch for {name} (the archive was modified or damaged); refusing"
            )
        if name.startswith("blobs/") and digests[name] != name.rsplit("/", 1)[1][:-4]:
            raise ArchiveError(f"blob {name} does not hash to its name; refusing")
    for need in (META, MANIFEST, VECTORS_MEMBER):
        if need not in present:
            raise ArchiveError(f"the archive lacks {need}; not a complete kgagent archive")
    try:
        meta = json.loads((dest / META).read_text(encoding="utf-8"))
        manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ArchiveError(f"{META} or {MANIFEST} is not valid JSON ({e}); refusing") from None
    if not isinstance(meta, dict) or meta.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(f"{archive} is not a kgagent memory archive ({META} format)")
    if not isinstance(manifest, dict):
        raise ArchiveError(f"{MANIFEST} in the archive is not an object")
    fv = meta.get("format_version")
    if not isinstance(fv, int) or fv > ARCHIVE_VERSION:
        raise ArchiveError(
            f"archive format version {fv} is newer than this kgagent reads ({ARCHIVE_VERSION}); "
            "upgrade kgagent"
        )
    tables = meta.get("tables")
    if not isinstance(tables, dict):
        raise ArchiveError(f"{META} lists no tables")
    graph_members = {n for n in present if n.startswith("graph/")}
    declared = set()
    for name, t in tables.items():
        kind = t.get("kind") if isinstance(t, dict) else None
        member = f"graph/{'nodes' if kind == 'node' else 'rels'}/{name}.parquet"
        if (
            kind not in ("node", "rel")
            or not re.fullmatch(_IDENT, str(name))
            or t.get("member") != member
        ):
            raise ArchiveError(f"{META} describes table {name!r} wrongly; refusing")
        declared.add(member)
    if declared != graph_members:
        odd = sorted(declared ^ graph_members)
        raise ArchiveError(f"graph member {odd[0]!r} and {META} disagree; refusing")
    return meta, manifest


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    seen: set[str] = set()
    for m in tar:
        name = m.name
        if name.startswith("/") or name.startswith("\\") or re.match(r"^[A-Za-z]:", name):
            raise ArchiveError(f"archive member {name!r} has an absolute path; refusing")
        if ".." in name.replace("\\", "/").split("/"):
            raise ArchiveError(f"archive member {name!r} climbs out of the target (..); refusing")
        if m.issym() or m.islnk():
            raise ArchiveError(f"archive member {name!r} is a link; refusing")
        if m.isdev() or m.isfifo() or m.isdir() or not m.isreg():
            raise ArchiveError(f"archive member {name!r} is not a regular file; refusing")
        if not _MEMBER.match(name):
            raise ArchiveError(f"unknown archive member {name!r}; refusing")
        if name in seen:
            raise ArchiveError(f"archive member {name!r} appears twice; refusing")
        seen.add(name)
        yield m


def _check_compatible(meta: dict[str, Any], manifest: dict[str, Any], expect: str | None) -> int:
    latest = migrations.latest_version()
    version = manifest.get("schema_version")
    if not isinstance(version, int) or version < 1 or version != meta.get("schema_version"):
        raise ArchiveError("the archive's schema version is missing or inconsistent; refusing")
    if version > latest:
        raise SchemaVersionError(
            f"the archive has schema version {version}, newer than this kgagent knows ({latest}); "
            "upgrade kgagent to import it"
        )
    encoder = manifest.get("encoder")
    if encoder != meta.get("encoder"):
        raise ArchiveError(
            "the archive's manifest and archive.json name different encoders; refusing"
        )
    if expect is not None:
        have = (encoder or {}).get("identity")
        if have != expect:
            raise EncoderMismatchError(
                f"the archive was built with encoder {have or 'none'}, not {expect}; its states "
                "cannot be compared with features from another encoder"
            )
    return version


def _build(
    staged: Path,
    new: Path,
    meta: dict[str, Any],
    manifest: dict[str, Any],
    version: int,
    engine: str,
    cfg: Config,
    say: Progress,
) -> None:
    new.mkdir()
    now = time.time()
    encoder = manifest.get("encoder")
    write_manifest(
        new,
        {
            "schema_version": version,
            "kgagent_version": kgagent.__version__,
            "engine": engine,
            "encoder": encoder,
            "created": manifest.get("created", now),
            "updated": now,
            "imported": {"at": now, "source_engine": meta.get("source_engine")},
        },
    )
    tables: dict[str, Any] = meta["tables"]
    # Every table handed to the engine stays referenced until the engine is
    # closed, so closing never frees one. kuzu 0.11.3 aborted once in CI inside
    # Connection.close() right after these COPYs, on a machine whose disk was
    # nearly full (not reproduced in 100 imports alone). A write failing for lack
    # of space is one explanation; the binding dropping the last reference to a
    # scanned table outside the interpreter lock is another, and this rules it out.
    loaded: list[pa.Table] = []
    db = GraphDB(new / "graph.db", engine)
    try:
        migrations.apply(db, migrations.available()[:version])
        have = {
            (str(r["name"]), str(r["type"]).lower())
            for r in db.execute(queries.get("archive_tables").text)
        }
        have.discard((migrations.BOOKKEEPING, "node"))
        want = {(n, t["kind"]) for n, t in tables.items()}
        if have != want:
            odd = sorted(have ^ want)[0][0]
            raise ArchiveError(
                f"the archive's tables do not match schema version {version} (table {odd}); refusing"
            )
        state_revs: dict[str, int] = {}
        blob_refs: set[str] = set()
        order = sorted(tables, key=lambda n: (tables[n]["kind"] != "node", n))
        db.begin()
        try:
            for name in order:
                t = tables[name]
                tab = _read_parquet(staged / t["member"], t["member"])
                loaded.append(tab)
                _check_table(name, t, tab)
                if name == "State":
                    state_revs = dict(
                        zip(tab.column("id").to_pylist(), tab.column("feature_rev").to_pylist())
                    )
                for col, owner in (("thumbnail", "State"), ("crop", "Object")):
                    if name == owner and col in tab.column_names:
                        blob_refs.update(b for b in tab.column(col).to_pylist() if b)
                if tab.num_rows:
                    q = _load_query(name)
                    if q not in queries.load_all():
                        raise ArchiveError(f"no named query {q} to load table {name}")
                    try:
                        db.execute(queries.get(q).text, {"rows": tab})
                    except QueryError as e:
                        raise ArchiveError(f"table {name} does not load: {e}") from None
                say(f"graph: {name} {tab.num_rows} rows")
            db.commit()
        except BaseException:
            db.rollback()
            raise
    finally:
        db.close()
        loaded.clear()
    blobs = staged / "blobs"
    missing = sorted(b for b in blob_refs if not (blobs / b[:2] / f"{b}.png").is_file())
    if missing:
        raise ArchiveError(
            f"the archive lacks blob {missing[0]} that the graph refers to; refusing"
        )
    if blobs.is_dir():
        os.replace(blobs, new / "blobs")
    _load_vectors(staged / VECTORS_MEMBER, new, encoder, state_revs)
    say(f"vectors: {len(state_revs)} rows")


def _read_parquet(path: Path, member: str) -> pa.Table:
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as e:
        raise ArchiveError(
            f"{member} is not readable Parquet ({' '.join(str(e).split())})"
        ) from None


def _check_table(name: str, t: dict[str, Any], tab: pa.Table) -> None:
    cols, types = t.get("columns"), t.get("types")
    if tab.column_names != cols or not isinstance(types, list) or len(types) != len(cols):
        raise ArchiveError(f"table {name} has columns {tab.column_names}, {META} says {cols}")
    if tab.num_rows != t.get("rows"):
        raise ArchiveError(f"table {name} has {tab.num_rows} rows, {META} says {t.get('rows')}")
    for c, ty in zip(cols, types):
        want = _ARROW.get(ty)
        if want is None or tab.schema.field(c).type != want:
            raise ArchiveError(
                f"column {name}.{c} has type {tab.schema.field(c).type}, expected {ty}"
            )
    if t["kind"] == "node" and tab.num_rows:
        key = tab.column(cols[0])
        if key.null_count or len(set(key.to_pylist())) != tab.num_rows:
            raise ArchiveError(f"table {name} has empty or duplicate keys; refusing")
    if t["kind"] == "rel" and tab.num_rows:
        if tab.column("src").null_count or tab.column("dst").null_count:
            raise ArchiveError(f"rel table {name} has edges without an end; refusing")


def _load_vectors(path: Path, new: Path, encoder: dict | None, revs: dict[str, int]) -> None:
    tab = _read_parquet(path, VECTORS_MEMBER)
    if encoder is None:
        if revs or tab.num_rows:
            raise ArchiveError("the archive has states or vectors but no encoder; refusing")
        return
    dim = int(encoder["dim"])
    if tab.schema != _vector_schema(dim):
        raise ArchiveError(f"{VECTORS_MEMBER} does not hold {dim}-d vectors as the encoder says")
    ids = tab.column("id").to_pylist()
    rv = tab.column("rev").to_pylist()
    if len(set(ids)) != len(ids) or dict(zip(ids, rv)) != revs:
        raise ArchiveError(
            "the archive's vectors do not match its states (each state needs exactly its "
            "committed vector); refusing"
        )
    vecs = tab.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    if not np.all(np.isfinite(vecs)):
        raise ArchiveError("the archive's vectors hold non-finite numbers; refusing")
    import lancedb

    db = lancedb.connect(str(new / "vectors"))
    db.create_table(VECTOR_TABLE, data=tab, schema=_vector_schema(dim))


def _verify_built(new: Path, meta: dict[str, Any], cfg: Config) -> dict[str, Any]:
    """Open the new memory the normal way (migrating an older schema) and check it."""
    from kgagent.memory.store import Memory

    c = replace(cfg, memory=replace(cfg.memory, backup_on_migrate=False))
    mem = Memory.open(new, c, read_only=False, create=False)
    try:
        bad = {k: v for k, v in mem.consistency.items() if v}
        if bad:
            raise ArchiveError(f"the imported memory is inconsistent ({bad}); refusing")
        stats = mem.stats().as_row()
        rows = {n: t["rows"] for n, t in meta["tables"].items()}
        if rows.get("State", 0) != stats["nodes"]:
            raise ArchiveError("the imported memory lost states; refusing")
        summary = {"schema_version": mem.manifest.get("schema_version")}
        summary["encoder"] = (mem.encoder or {}).get("identity")
        summary.update(stats)
        summary["vectors"] = len(mem.vectors) if mem.vectors is not None else 0
        summary["blobs"] = len(mem.blobs.all_ids())
        return summary
    finally:
        mem.close()


def _swap(new: Path, target: Path, replacing: bool, work: Path) -> None:
    if not replacing:
        if target.exists():
            target.rmdir()  # empty (checked before)
        os.replace(new, target)
        return
    old = work / "previous"
    os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)
        raise
