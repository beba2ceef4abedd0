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

The parts: the layout's names and types (``archive_format``), writing
(``archive_export``), reading and checking an archive file (``archive_verify``)
and building the new memory (``archive_import``).
"""

from kgagent.memory.archive_export import export_memory
from kgagent.memory.archive_format import ARCHIVE_FORMAT, ARCHIVE_VERSION, META, SUMS
from kgagent.memory.archive_import import import_memory
from kgagent.memory.archive_verify import inspect_archive

__all__ = [
    "ARCHIVE_FORMAT",
    "ARCHIVE_VERSION",
    "META",
    "SUMS",
    "export_memory",
    "import_memory",
    "inspect_archive",
]
