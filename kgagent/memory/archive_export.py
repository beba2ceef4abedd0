"""Export a memory to one archive file (layout: :mod:`kgagent.memory.archive`).

The memory is opened read-only and every graph table is read in one read-only
transaction through named queries (``archive_export_<table>``, its columns from
``catalog_columns_<table>``), so the vectors written are exactly the revisions
that transaction saw committed.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import tarfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import kgagent
from kgagent.config import Config
from kgagent.errors import ArchiveError, MemoryStoreError
from kgagent.memory import migrations, queries, staging
from kgagent.memory.archive_format import (
    ARCHIVE_FORMAT,
    ARCHIVE_VERSION,
    ARROW,
    IDENT,
    META,
    SUMS,
    VECTORS_MEMBER,
    Progress,
    blob_ids,
    columns_query,
    export_query,
    noop,
    vector_schema,
)
from kgagent.memory.engine import GraphDB
from kgagent.memory.files import MANIFEST, side_name, temp_file, umask
from kgagent.memory.lifecycle import VECTORS
from kgagent.memory.store import Memory
from kgagent.memory.user_tables import is_kgagent_table, table_queries
from kgagent.memory.vectors import VectorStore

#: gzip level of the tar: the fastest, since Parquet members are already compressed.
GZIP_LEVEL = 1
#: Parquet's codec for the graph and vector members.
PARQUET_COMPRESSION = "zstd"
#: Report progress every this many blobs.
BLOB_PROGRESS_EVERY = 1000


#: Name endings that promise another kind of file than the gzip tar written, and the
#: kind they promise (any other name is taken as the user's choice).
OTHER_FORMATS = {
    ".zip": "a zip file",
    ".7z": "a 7-Zip file",
    ".rar": "a RAR file",
    ".tar": "an uncompressed tar",
    ".tar.bz2": "a bzip2 tar",
    ".tbz2": "a bzip2 tar",
    ".tar.xz": "an xz tar",
    ".txz": "an xz tar",
    ".tar.zst": "a zstd tar",
}


def _other_format(name: str) -> str:
    """The kind of file ``name``'s ending promises, when it is not a gzip tar, else ""."""
    lower = name.lower()
    return next((kind for end, kind in OTHER_FORMATS.items() if lower.endswith(end)), "")


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
    say = progress or noop
    out = Path(out).expanduser()
    if out.is_dir():  # before --force's advice, which would not help
        raise ArchiveError(f"{out} is a directory; give a file name such as memory.kgmem.tar.gz")
    if out.exists() and not out.is_file():  # --force would rename a file over /dev/null
        raise ArchiveError(
            f"{out} is not a regular file (a device, a pipe or a socket); "
            "give a file name such as memory.kgmem.tar.gz"
        )
    other = _other_format(out.name)
    if other:  # a .zip that is a gzip tar inside would fail in the tool its name suggests
        raise ArchiveError(
            f"{out}: the archive is a gzip-compressed tar, not {other}; "
            "give a name ending in .tar.gz, such as memory.kgmem.tar.gz"
        )
    if out.exists() and not force:
        raise ArchiveError(f"{out} exists; pass --force to overwrite it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        for stale in staging.stale_temp_files(out.parent, f".{side_name(out.name)}."):
            stale.unlink(missing_ok=True)  # left by a killed export
        fd, tmp = temp_file(out, archive_mode(Path(memory_path).expanduser()))
    except OSError as e:
        raise ArchiveError(
            f"cannot write {out} ({e.strerror or e}); choose a writable place"
        ) from None
    held = None
    try:  # from here on, however it ends (a stop signal included), the temporary goes
        os.close(fd)
        held = staging.lock_file(Path(tmp))  # live: not removed as stale by another export
        return _export(memory_path, out, Path(tmp), config, say)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        if held is not None:
            held.release()


def _export(
    memory_path: str | Path, out: Path, tmp: Path, config: Config | None, say: Progress
) -> dict[str, Any]:
    """Read the memory and write the archive into ``tmp``, then rename it to ``out``."""
    t0 = time.time()
    mem = Memory.open(memory_path, config or Config(), read_only=True, create=False)
    try:
        manifest = dict(mem.manifest)
        db = mem._db
        assert db is not None
        tables = _graph_tables(db)
        payload: dict[str, bytes] = {}
        meta_tables: dict[str, Any] = {}
        state_revs: dict[str, int] = {}
        named: set[str] = set()  # the blobs the graph names: thumbnails and crops
        with db.transaction(read_only=True):
            for name, kind in tables:
                tab, types = _export_table(db, name, kind)
                if name == "State":
                    state_revs = dict(
                        zip(tab.column("id").to_pylist(), tab.column("feature_rev").to_pylist())
                    )
                named |= blob_ids(name, tab)
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
        encoder = manifest.get("encoder")
        vectors = _export_vectors(mem.path, encoder, state_revs)
        payload[VECTORS_MEMBER] = _parquet_bytes(vectors)
        say(f"vectors: {vectors.num_rows} rows")
        present = set(mem.blobs.all_ids())
        blob_dir = mem.blobs.directory
    finally:
        mem.close()
    lacking = sorted(named - present)
    if lacking:  # an import refuses such an archive: a backup that cannot be restored
        raise ArchiveError(
            f"the memory lacks {len(lacking)} blob(s) its graph names (e.g. {lacking[0]} in "
            f"{blob_dir}), so an archive of it could not be imported: restore blobs/ from "
            "where the memory was copied from (`kgagent memory check` lists the checks)"
        )

    # Only the blobs the graph names: one no row names (an object deleted by hand, a write
    # that never committed) is nobody's experience, and may show what was meant to go.
    blobs = sorted(named)
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
    sums: list[tuple[str, str]] = []
    try:
        with tarfile.open(tmp, "w:gz", compresslevel=GZIP_LEVEL) as tar:
            head = {
                META: (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode(),
                MANIFEST: (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode(),
            }
            for member, data in [*head.items(), *payload.items()]:
                sums.append((hashlib.sha256(data).hexdigest(), member))
                _add_bytes(tar, member, data)
            for i, blob in enumerate(blobs):
                data = _read_blob(blob_dir, blob)
                digest = hashlib.sha256(data).hexdigest()
                if digest != blob:
                    raise ArchiveError(
                        f"blob {blob} in {blob_dir} is damaged (its content hashes to {digest}); "
                        "run `kgagent memory check`"
                    )
                member = f"blobs/{blob[:2]}/{blob}.png"
                sums.append((digest, member))
                _add_bytes(tar, member, data)
                if (i + 1) % BLOB_PROGRESS_EVERY == 0:
                    say(f"blobs: {i + 1}/{len(blobs)}")
            text = "".join(f"{h}  {m}\n" for h, m in sums)
            _add_bytes(tar, SUMS, text.encode())
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except OSError as e:
        raise ArchiveError(f"cannot write {out}: {e.strerror or e}") from None
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
    summary["blobs_left_out"] = len(present - named)  # last: the columns before keep their places
    return summary


def archive_mode(memory: Path) -> int:
    """The archive's permissions: a new file's (``0o666`` less the umask), and no wider
    for group and others than the memory's folder lets them in (read, write), so an
    archive of a private memory is private whatever the umask. Its other ancestors are
    not looked at: the archive usually lies elsewhere."""
    try:
        folder = stat.S_IMODE(memory.stat().st_mode)
    except OSError:  # no memory there: the open says so, before anything is written
        folder = 0
    return 0o666 & ~umask() & (0o600 | (folder & 0o066))


def _graph_tables(db: GraphDB) -> list[tuple[str, str]]:
    """(name, NODE|REL) of every data table, node tables first; each must have its queries."""
    rows = db.execute(queries.get("catalog_tables").text)
    out = []
    for r in rows:
        name, kind = str(r["name"]), str(r["type"]).upper()
        if name == migrations.BOOKKEEPING:
            continue
        if kind not in ("NODE", "REL") or not re.fullmatch(IDENT, name):
            raise MemoryStoreError(f"cannot export graph table {name!r} of kind {kind}")
        if not is_kgagent_table(name):
            raise MemoryStoreError(
                f"the graph holds a table {name} that is not kgagent's (made by a `kgagent query "
                f"--write`?); an archive carries kgagent's tables only: drop it (`kgagent query "
                f'--write "DROP TABLE {name}"`) and export again'
            )
        if not all(q in queries.load_all() for q in table_queries(name)):
            raise MemoryStoreError(
                f"table {name} lacks one of its named queries (queries/ is out of date with the "
                "schema)"
            )
        out.append((name, kind))
    out.sort(key=lambda t: (t[1] != "NODE", t[0]))
    return out


def _table_info(db: GraphDB, table: str) -> list[tuple[str, str]]:
    """(column, Cypher type) in schema order (the named query ``catalog_columns_<table>``)."""
    rows = db.execute(queries.get(columns_query(table)).text)
    return [(str(r["name"]), str(r["type"])) for r in rows]


def _export_table(db: GraphDB, name: str, kind: str) -> tuple[pa.Table, list[str]]:
    info = _table_info(db, name)
    rows = db.execute(queries.get(export_query(name)).text)
    cols = [c for c, _ in info]
    types = [t for _, t in info]
    if kind == "REL":
        cols = ["src", "dst", *cols]
        types = ["STRING", "STRING", *types]  # every table's primary key is a STRING id
    got = list(rows[0]) if rows else None
    q = queries.get(export_query(name))
    declared = _returned_columns(q.text)
    if declared != cols or (got is not None and got != cols):
        raise MemoryStoreError(
            f"named query {q.name} returns {declared}, but table {name} has {cols} "
            "(queries/archive.cypher is out of date with the schema)"
        )
    arrays = []
    for c, t in zip(cols, types):
        if t not in ARROW:
            raise MemoryStoreError(f"cannot export column {name}.{c} of type {t}")
        arrays.append(pa.array([r[c] for r in rows], type=ARROW[t]))
    return pa.Table.from_arrays(arrays, names=cols), types


def _returned_columns(text: str) -> list[str]:
    """The ``AS alias`` names of a query's RETURN clause, in order."""
    ret = re.split(r"\bRETURN\b", queries.strip_strings(text), flags=re.I)[-1]
    ret = re.split(r"\bORDER\s+BY\b", ret, flags=re.I)[0]
    return re.findall(rf"\bAS\s+({IDENT})", ret, flags=re.I)


def _export_vectors(path: Path, encoder: dict | None, revs: dict[str, int]) -> pa.Table:
    if encoder is None:
        if revs:
            raise ArchiveError(
                "this memory has states but no encoder in its manifest; cannot export"
            )
        return vector_schema(1).empty_table()
    dim = int(encoder["dim"])
    if not revs:
        return vector_schema(dim).empty_table()
    store = VectorStore(path / VECTORS, dim, read_only=True)
    ids, rv, vecs, _ = store.rows()  # LanceDB rows and the journal's
    pick: dict[str, int] = {}
    for i, (sid, r) in enumerate(zip(ids, rv)):
        if revs.get(sid) == r:
            pick[sid] = i  # a revision seen twice (journal and table) is the same vector
    missing = [s for s in revs if s not in pick]
    if missing:
        raise ArchiveError(
            f"{len(missing)} state(s) have no committed vector (e.g. {missing[0]}): the memory "
            "was copied while an agent wrote it, or its vectors/ comes from another moment, "
            "and no repair brings a lost vector back; export the memory it was copied from, "
            'or a copy taken while no agent ran (docs/reliability.md, "Backups")'
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
        schema=vector_schema(dim),
    )


def _read_blob(blob_dir: Path, blob: str) -> bytes:
    try:
        return (blob_dir / blob[:2] / f"{blob}.png").read_bytes()
    except OSError as e:
        raise ArchiveError(
            f"cannot read blob {blob} of the memory ({e.strerror or e}); run `kgagent memory check`"
        ) from None


def _parquet_bytes(tab: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(tab, buf, compression=PARQUET_COMPRESSION)
    return buf.getvalue()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = int(time.time())
    info.type = tarfile.REGTYPE
    tar.addfile(info, io.BytesIO(data))
