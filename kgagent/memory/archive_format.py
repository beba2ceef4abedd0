"""The archive's layout: member names, format version, column types, query names.

Shared by export (:mod:`~kgagent.memory.archive_export`), verification
(:mod:`~kgagent.memory.archive_verify`) and import
(:mod:`~kgagent.memory.archive_import`); the layout itself is described in
:mod:`kgagent.memory.archive` and docs/memory.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa

from kgagent.memory.files import MANIFEST

ARCHIVE_FORMAT = "kgagent-archive"
ARCHIVE_VERSION = 1
META = "archive.json"
SUMS = "SHA256SUMS"
VECTORS_MEMBER = "vectors/states.parquet"

#: A table name: the only text of a member path or query name taken from the graph.
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
MEMBER = re.compile(
    rf"^(?:{re.escape(META)}|{re.escape(MANIFEST)}|{SUMS}|{re.escape(VECTORS_MEMBER)}"
    rf"|graph/(?:nodes|rels)/{IDENT}\.parquet|blobs/[0-9a-f]{{2}}/[0-9a-f]{{64}}\.png)$"
)

#: Cypher column types ↔ Arrow types (the types the schema uses, and a few more).
ARROW = {
    "STRING": pa.string(),
    "INT64": pa.int64(),
    "INT32": pa.int32(),
    "INT16": pa.int16(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "BOOL": pa.bool_(),
}

#: Limits on what an archive may unpack to, enforced while reading it (before a byte
#: past them is written): an archive is refused long before it can fill the disk.
MAX_MEMBERS = 4_000_000
#: The largest blob (a PNG crop or thumbnail: kilobytes in practice).
MAX_BLOB_BYTES = 64 << 20
#: The largest archive.json, manifest.json or SHA256SUMS.
MAX_META_BYTES = 64 << 20
#: The largest Parquet member (a table or the vectors).
MAX_TABLE_BYTES = 16 << 30
#: The most bytes an archive may unpack to in all.
MAX_TOTAL_BYTES = 64 << 30
#: Unpacked bytes per compressed byte, checked once past RATIO_AFTER_BYTES: the members
#: are PNG and Parquet, already compressed, so a real archive stays near 1.
MAX_RATIO = 50
RATIO_AFTER_BYTES = 64 << 20
#: Bytes allowed after the tar's end-of-archive blocks (padding), before the gzip trailer.
MAX_TRAILING_BYTES = 1 << 20

Progress = Callable[[str], None]


#: The columns that name blobs (content hashes of PNGs in ``blobs/``), per node table.
BLOB_COLUMNS = {"State": ("thumbnail",), "Object": ("crop",)}


def blob_ids(table: str, tab: pa.Table) -> set[str]:
    """The blob ids a table's rows name (its :data:`BLOB_COLUMNS`; empty cells are none)."""
    return {
        b
        for col in BLOB_COLUMNS.get(table, ())
        if col in tab.column_names
        for b in tab.column(col).to_pylist()
        if b
    }


def member_cap(name: str) -> int:
    """The largest size a member of this name may have."""
    if name.startswith("blobs/"):
        return MAX_BLOB_BYTES
    if name.endswith(".parquet"):
        return MAX_TABLE_BYTES
    return MAX_META_BYTES


def noop(_msg: str) -> None:
    pass


def export_query(table: str) -> str:
    """The named query that reads every row of ``table`` (``queries/archive.cypher``)."""
    return f"archive_export_{table.lower()}"


def load_query(table: str) -> str:
    """The named query that bulk-loads ``table`` from ``$rows``."""
    return f"archive_load_{table.lower()}"


def columns_query(table: str) -> str:
    """The named query of ``table``'s columns and types (``queries/catalog.cypher``)."""
    return f"catalog_columns_{table.lower()}"


def vector_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("rev", pa.int64()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ]
    )
