"""Reading an archive file safely: every member checked before it is written, then
the checksums, then ``archive.json`` and the manifest (layout: :mod:`kgagent.memory.archive`).

Each refusal is one line (:class:`ArchiveError`); nothing is written outside the
staging directory the caller passes.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kgagent.errors import ArchiveError, EncoderMismatchError, SchemaVersionError
from kgagent.memory import migrations
from kgagent.memory.archive_format import (
    ARCHIVE_FORMAT,
    ARCHIVE_VERSION,
    ARROW,
    IDENT,
    MAX_MEMBERS,
    MAX_RATIO,
    MAX_TOTAL_BYTES,
    MAX_TRAILING_BYTES,
    MEMBER,
    META,
    RATIO_AFTER_BYTES,
    SUMS,
    VECTORS_MEMBER,
    Progress,
    member_cap,
    noop,
)
from kgagent.memory.diskspace import (
    DEFAULT_RESERVE_BYTES,
    NO_ROOM,
    DiskSpaceError,
    SpaceGuard,
    free_bytes,
)
from kgagent.memory.files import FORMAT, MANIFEST, encoder_problem, manifest_problem

#: Bytes read from the tar stream at a time while extracting and hashing a member.
READ_CHUNK = 1 << 20


def inspect_archive(archive: str | Path) -> dict[str, Any]:
    """The verified ``archive.json`` of an archive (members, checksums and blobs checked)."""
    archive = Path(archive).expanduser()
    with tempfile.TemporaryDirectory(prefix="kgagent-inspect-") as tmp:
        meta, _manifest = extract_verified(archive, Path(tmp))
        return meta


def extract_verified(
    archive: Path, dest: Path, say: Progress = noop, *, reserve: int = DEFAULT_RESERVE_BYTES
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Extract every member into ``dest`` after checking it; verify the checksums.

    Returns ``archive.json`` and the memory's manifest, both checked. The unpacking
    stops (:class:`~kgagent.memory.diskspace.DiskSpaceError`, naming ``dest``) when the
    free space on ``dest``'s file system falls below ``reserve`` bytes
    (``memory.disk_reserve_mb``), or the disk fills.
    """
    digests = _extract(archive, dest, reserve)
    say(f"read {len(digests)} archive members")
    present = _check_sums(archive, dest, digests)
    return _read_meta(archive, dest, present)


def _extract(archive: Path, dest: Path, reserve: int) -> dict[str, str]:
    """Every member written under ``dest`` (after :func:`_members` checked it); name → sha256.

    The gzip stream is read to its end, so a missing trailer (a truncated file) or a
    wrong CRC is refused; sizes are capped (:mod:`~kgagent.memory.archive_format`)
    before a member is written, and the unpacked total as it grows.
    """
    digests: dict[str, str] = {}
    root = dest.resolve()
    try:
        with open(archive, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            budget = _Budget(archive, raw, dest, reserve)
            with tarfile.open(fileobj=gz, mode="r|") as tar:
                for m in _members(tar, budget):
                    path = dest.joinpath(*m.name.split("/"))
                    if root not in path.resolve().parents:
                        raise ArchiveError(
                            f"archive member {m.name!r} escapes the target; refusing"
                        )
                    src = tar.extractfile(m)
                    if src is None:
                        raise ArchiveError(
                            f"archive member {m.name!r} is not a regular file; refusing"
                        )
                    path.parent.mkdir(parents=True, exist_ok=True)
                    h = hashlib.sha256()
                    with src, open(path, "wb") as f:
                        for chunk in iter(lambda s=src: s.read(READ_CHUNK), b""):
                            budget.add(len(chunk))
                            h.update(chunk)
                            f.write(chunk)
                    digests[m.name] = h.hexdigest()
            # The tar ends with zero blocks; the gzip stream must then end, whole.
            trailing = 0
            for chunk in iter(lambda: gz.read(READ_CHUNK), b""):
                trailing += len(chunk)
                if trailing > MAX_TRAILING_BYTES:
                    raise ArchiveError(
                        f"{archive} has data after the end of its tar archive; refusing"
                    )
    except ArchiveError:
        raise
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        reason = " ".join(str(e).split()) or e.__class__.__name__
        raise ArchiveError(
            f"{archive} is not a readable kgagent archive (corrupt or truncated: {reason})"
        ) from None
    except OSError as e:
        if e.errno in NO_ROOM:  # the caller names its own path
            raise DiskSpaceError(dest, _free(dest), reserve) from None
        where = f" {e.filename}" if getattr(e, "filename", None) else ""
        raise ArchiveError(f"cannot import {archive}: {e.strerror or e}{where}") from None
    return digests


def _free(path: Path) -> int:
    try:
        return free_bytes(path)
    except OSError:
        return 0


class _Budget:
    """Counts unpacked bytes against the archive's caps while it is read."""

    def __init__(self, archive: Path, raw: Any, dest: Path, reserve: int) -> None:
        self.archive = archive
        self.raw = raw
        self.space = SpaceGuard(dest, reserve)
        self.total = 0
        self.members = 0

    def member(self, m: tarfile.TarInfo) -> None:
        self.space.check()
        self.members += 1
        if self.members > MAX_MEMBERS:
            raise ArchiveError(f"{self.archive} has more than {MAX_MEMBERS:,} members; refusing")
        cap = member_cap(m.name)
        if m.size > cap:
            raise ArchiveError(
                f"archive member {m.name!r} is {m.size:,} bytes, more than the {cap:,} a "
                "member of its kind may have; refusing"
            )
        if self.total + m.size > MAX_TOTAL_BYTES:
            raise ArchiveError(
                f"{self.archive} unpacks to more than {MAX_TOTAL_BYTES:,} bytes; refusing"
            )

    def add(self, n: int) -> None:
        self.total += n
        if self.total > MAX_TOTAL_BYTES:
            raise ArchiveError(
                f"{self.archive} unpacks to more than {MAX_TOTAL_BYTES:,} bytes; refusing"
            )
        if self.total > RATIO_AFTER_BYTES:
            packed = max(1, self.raw.tell())
            if self.total > MAX_RATIO * packed:
                raise ArchiveError(
                    f"{self.archive} unpacks to over {MAX_RATIO} times its size (a decompression "
                    "bomb, not a kgagent archive); refusing"
                )


def _check_sums(archive: Path, dest: Path, digests: dict[str, str]) -> set[str]:
    """``SHA256SUMS`` lists exactly the other members, with their hashes; returns them."""
    if SUMS not in digests:
        raise ArchiveError(f"{archive} has no {SUMS} member; not a kgagent archive")
    listed: dict[str, str] = {}
    try:
        text = (dest / SUMS).read_bytes().decode("ascii")
    except UnicodeDecodeError:
        raise ArchiveError(f"{SUMS} is not text; the archive is damaged") from None
    for n, line in enumerate(text.splitlines(), 1):
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
    return present


def _read_meta(
    archive: Path, dest: Path, present: set[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``archive.json`` and ``manifest.json``: present, valid, and agreeing with the members."""
    for need in (META, MANIFEST, VECTORS_MEMBER):
        if need not in present:
            raise ArchiveError(f"the archive lacks {need}; not a complete kgagent archive")
    try:
        meta = json.loads((dest / META).read_text(encoding="utf-8"))
        manifest = json.loads((dest / MANIFEST).read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:
        reason = " ".join(str(e).split()) or e.__class__.__name__
        raise ArchiveError(f"{META} or {MANIFEST} is not valid JSON ({reason}); refusing") from None
    if not isinstance(meta, dict):
        raise ArchiveError(f"{archive} is not a kgagent memory archive ({META} is not an object)")
    if not isinstance(manifest, dict):
        raise ArchiveError(f"{MANIFEST} in the archive is not an object")
    for doc, data, want in ((META, meta, ARCHIVE_FORMAT), (MANIFEST, manifest, FORMAT)):
        found = data.get("format")
        if found != want:
            raise ArchiveError(
                f"{archive} is not a kgagent memory archive: {doc} format is "
                f"{repr(found)[:80]}, expected {want!r}; refusing"
            )
    fv = meta.get("format_version")
    if not isinstance(fv, int) or isinstance(fv, bool) or fv < 1:
        raise ArchiveError(
            f"{META} format_version is {repr(fv)[:80]}, expected a whole number from 1 (this "
            f"kgagent reads up to {ARCHIVE_VERSION}); refusing"
        )
    if fv > ARCHIVE_VERSION:
        raise ArchiveError(
            f"{META} format_version is {fv}, newer than this kgagent reads ({ARCHIVE_VERSION}): "
            "made by a newer kgagent; upgrade kgagent to import it"
        )
    if "memory_id" not in manifest and "created" not in manifest:
        # A memory from before ids is known by its creation time (memory_identity);
        # without either, every such archive would pass for the same memory in a merge.
        raise ArchiveError(
            f"the archive's {MANIFEST} has neither memory_id nor created, one of which every "
            "kgagent memory has; refusing"
        )
    problem = manifest_problem(manifest) or (
        f"encoder: {encoder_problem(meta.get('encoder'))}"
        if encoder_problem(meta.get("encoder"))
        else None
    )
    if problem:
        raise ArchiveError(f"the archive's {MANIFEST} or {META} is damaged ({problem}); refusing")
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
            or not re.fullmatch(IDENT, str(name))
            or t.get("member") != member
            or not _table_shape_ok(t)
        ):
            raise ArchiveError(f"{META} describes table {name!r} wrongly; refusing")
        declared.add(member)
    if declared != graph_members:
        odd = sorted(declared ^ graph_members)
        raise ArchiveError(f"graph member {odd[0]!r} and {META} disagree; refusing")
    return meta, manifest


def _table_shape_ok(t: dict[str, Any]) -> bool:
    """Columns and types: equal-length lists of names and known types; rows a count."""
    cols, types, rows = t.get("columns"), t.get("types"), t.get("rows")
    return (
        isinstance(cols, list)
        and isinstance(types, list)
        and len(cols) == len(types)
        and all(isinstance(c, str) and re.fullmatch(IDENT, c) for c in cols)
        and all(isinstance(ty, str) and ty in ARROW for ty in types)
        and isinstance(rows, int)
        and not isinstance(rows, bool)
        and rows >= 0
    )


def _members(tar: tarfile.TarFile, budget: _Budget) -> Iterator[tarfile.TarInfo]:
    """The members, each refused unless a regular file at a path of the layout, once."""
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
        if not MEMBER.match(name):
            raise ArchiveError(f"unknown archive member {name!r}; refusing")
        if name in seen:
            raise ArchiveError(f"archive member {name!r} appears twice; refusing")
        seen.add(name)
        budget.member(m)
        yield m


def check_compatible(meta: dict[str, Any], manifest: dict[str, Any], expect: str | None) -> int:
    """The archive's schema version, once it and the encoder are known to be importable."""
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
