"""`kgagent memory info|check|export|import`: look at, verify and move a memory.

No logic lives here: it calls :mod:`kgagent.memory` and :mod:`kgagent.memory.archive`.
Archive format and checks: docs/memory.md.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import click
from kgagent.cli.common import config_options, memory_option
from kgagent.cli.output import emit, format_option
from kgagent.cli.query import open_memory

from kgagent.config import Config
from kgagent.errors import KGAgentError


def _say(msg: str) -> None:
    click.echo(msg, err=True)


def _emit_record(record: dict[str, Any], fmt: str) -> None:
    """One record: key/value lines for people, one object for programs."""
    if fmt == "table":
        emit([{"key": k, "value": v} for k, v in record.items()], fmt)
    else:
        emit([record], fmt)


@click.group("memory")
def memory_group() -> None:
    """Look at, check, export and import a memory."""


@memory_group.command("info")
@click.option(
    "--migrate",
    is_flag=True,
    help="Open read-write so that an older memory is migrated (after a backup) to this kgagent's schema.",
)
@format_option
@memory_option
@config_options
def info_cmd(migrate: bool, fmt: str, memory: Path, config: Config) -> None:
    """Show where a memory is, what built it, and its graph statistics."""
    mem = open_memory(memory, config, write=migrate)
    try:
        record = mem.info()
    finally:
        mem.close()
    _emit_record(record, fmt)


def check_memory(memory: Path, config: Config) -> list[dict[str, Any]]:
    """Rows of `memory check`: each check with status ok / repairable / problem."""
    mem = open_memory(memory, config, write=False)
    try:
        rows: list[dict[str, Any]] = []
        c = mem.consistency

        def add(check: str, count: int, bad: str, detail: str) -> None:
            rows.append(
                {
                    "check": check,
                    "status": "ok" if count == 0 else bad,
                    "count": count,
                    "detail": detail,
                }
            )

        n_states = mem.stats().nodes
        add(
            "states_without_vector",
            int(c.get("missing_vectors", 0)) if mem.vectors is not None else n_states,
            "problem",
            "State nodes whose committed feature revision has no vector row",
        )
        add(
            "orphan_vector_rows",
            int(c.get("orphan_rows", 0)),
            "repairable",
            "vector rows of states the graph never committed (removed on the next read-write open)",
        )
        add(
            "uncommitted_revisions",
            int(c.get("uncommitted_revisions", 0)),
            "repairable",
            "vector revisions newer than the graph committed (removed on the next read-write open)",
        )
        add(
            "torn_journal_tail",
            int(c.get("journal_torn_bytes", 0)),
            "repairable",
            "bytes of a half-written vector journal record (a crash mid-write; never committed; "
            "cut off on the next read-write open)",
        )
        dangling = mem._q("check_dangling_skill_edges")
        add(
            "dangling_skill_edges",
            len(dangling),
            "problem",
            "skill edges of a missing or pruned skill",
        )
        refs = {r["blob"] for r in mem._q("check_blob_refs")}
        have = set(mem.blobs.all_ids())
        add(
            "missing_blobs",
            len(refs - have),
            "problem",
            "thumbnails/crops the graph names but blobs/ lacks",
        )
        damaged = 0
        for b in have:
            data = mem.blobs.get_bytes(b)
            if hashlib.sha256(data).hexdigest() != b:
                damaged += 1
        add("damaged_blobs", damaged, "problem", "blobs whose content does not hash to their name")
        return rows
    finally:
        mem.close()


@memory_group.command("check")
@click.option(
    "--repair",
    is_flag=True,
    help="First open read-write once, which removes crash leftovers (orphan vector rows).",
)
@format_option
@memory_option
@config_options
def check_cmd(repair: bool, fmt: str, memory: Path, config: Config) -> None:
    """Check that graph, vectors and blobs agree; exit 1 if a problem is found."""
    if repair:
        open_memory(memory, config, write=True).close()
    rows = check_memory(memory, config)
    emit(rows, fmt)
    problems = [r["check"] for r in rows if r["status"] == "problem"]
    if problems:
        raise KGAgentError(f"memory check found problems: {', '.join(problems)}")


@memory_group.command("export")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
@format_option
@memory_option
@config_options
def export_cmd(out: Path, force: bool, fmt: str, memory: Path, config: Config) -> None:
    """Write the memory to one portable archive file OUT (.tar.gz).

    The archive holds the manifest, SHA-256 checksums, the graph as engine-neutral
    Parquet tables, the committed vectors and the blobs; it imports under either
    engine (the way to move a memory between kuzu and ladybug).
    """
    from kgagent.memory.archive import export_memory

    summary = export_memory(memory, out, config, force=force, progress=_say)
    _emit_record(summary, fmt)


@memory_group.command("import")
@click.argument("archive", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing memory at --memory (kept aside until the import has succeeded).",
)
@click.option(
    "--expect-encoder",
    default=None,
    metavar="IDENTITY",
    help="Refuse the archive unless its states were encoded by this encoder identity.",
)
@format_option
@memory_option
@config_options
def import_cmd(
    archive: Path, force: bool, expect_encoder: str | None, fmt: str, memory: Path, config: Config
) -> None:
    """Import the archive file ARCHIVE as the memory at --memory.

    Verifies checksums, member paths, schema version and encoder first; never
    overwrites an existing memory without --force.
    """
    from kgagent.memory.archive import import_memory

    summary = import_memory(
        archive, memory, config, force=force, expect_encoder=expect_encoder, progress=_say
    )
    _emit_record(summary, fmt)
