"""`kgagent memory info|check|forget|export|import`: look at, verify, forget and move a memory.

No logic lives here: it calls :mod:`kgagent.memory` and :mod:`kgagent.memory.archive`.
Archive format and checks: docs/memory.md.
"""

from __future__ import annotations

from pathlib import Path

import click
from kgagent.cli.common import NonEmptyPath, common_options, mark_writes, open_memory, work_done
from kgagent.cli.output import emit, emit_record

from kgagent.config import Config
from kgagent.errors import KGAgentError
from kgagent.memory.merge_place import leftovers_row, leftovers_warning, remove_leftovers
from kgagent.terminal import tell


def _say(msg: str) -> None:
    tell(msg)  # a reader gone from the pipe does not stop the work


@click.group("memory")
def memory_group() -> None:
    """Look at, check, forget from, export and import a memory."""


@memory_group.command("info")
@click.option(
    "--migrate",
    is_flag=True,
    help="Open read-write so that an older memory is migrated (after a backup) to this kgagent's schema.",
)
@common_options()
def info_cmd(migrate: bool, memory: Path, config: Config, fmt: str) -> None:
    """Show where a memory is, what built it, and its graph statistics."""
    if migrate:
        mark_writes()
    mem = open_memory(memory, config, write=migrate)
    warning = leftovers_warning(Path(memory))
    if warning:
        tell(warning)
    try:
        record = mem.info()
    finally:
        mem.close()
    emit_record(record, fmt)


@memory_group.command("check")
@click.option(
    "--repair",
    is_flag=True,
    help="First repair what can be: finish an interrupted import, replay the engine's log "
    "(up to a damaged record, keeping a copy), remove crash leftovers (orphan vector rows, "
    "a killed merge's work directory) and the blobs no graph row names.",
)
@common_options()
def check_cmd(repair: bool, memory: Path, config: Config, fmt: str) -> None:
    """Check that graph, vectors and blobs agree; exit 1 if a problem is found."""
    if repair:
        mark_writes()
    if repair:
        from kgagent.memory.repair import repair as repair_memory

        repair_memory(memory, config, _say)
        remove_leftovers(Path(memory).resolve(), _say)
    mem = open_memory(memory, config, write=False)
    try:
        rows = mem.check()
    finally:
        mem.close()
    rows.append(leftovers_row(Path(memory).resolve()))
    emit(rows, fmt)
    problems = [r["check"] for r in rows if r["status"] == "problem"]
    if problems:
        raise KGAgentError(f"memory check found problems: {', '.join(problems)}")


@memory_group.command("forget")
@click.argument("text")
@click.option("--dry-run", is_flag=True, help="Count what would be removed; change nothing.")
@common_options()
def forget_cmd(text: str, dry_run: bool, memory: Path, config: Config, fmt: str) -> None:
    """Remove the text TEXT, read from the screen or typed, from the memory.

    Removes the objects whose label holds it (and their crops), the skills whose name,
    description or operations hold it or use those objects, the clusters named with it,
    and its input statistics; matches case-insensitively. Names the step logs under
    runs/ that hold it: delete those by hand (docs/memory.md, "Privacy").
    """
    if not dry_run:
        mark_writes()
    from kgagent.memory.forget import forget

    summary = forget(Path(memory), config, text, dry_run=dry_run, say=_say)
    if not dry_run:
        work_done()
    emit_record(summary, fmt)


@memory_group.command("export")
@click.argument("out", type=NonEmptyPath(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
@common_options()
def export_cmd(out: Path, force: bool, memory: Path, config: Config, fmt: str) -> None:
    """Write the memory to one portable archive file OUT (.tar.gz).

    The archive holds the manifest, SHA-256 checksums, the graph as engine-neutral
    Parquet tables, the committed vectors and the blobs; it imports under either
    engine (the way to move a memory between kuzu and ladybug).
    """
    mark_writes()
    from kgagent.memory.archive import export_memory

    summary = export_memory(memory, out, config, force=force, progress=_say)
    work_done()
    emit_record(summary, fmt)


@memory_group.command("import")
@click.argument("archive", type=NonEmptyPath(dir_okay=False, path_type=Path))
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
@common_options()
def import_cmd(
    archive: Path, force: bool, expect_encoder: str | None, memory: Path, config: Config, fmt: str
) -> None:
    """Import the archive file ARCHIVE as the memory at --memory.

    Verifies checksums, member paths, schema version and encoder first; never
    overwrites an existing memory without --force.
    """
    mark_writes()
    from kgagent.memory.archive import import_memory

    summary = import_memory(
        archive,
        memory,
        config,
        force=force,
        expect_encoder=expect_encoder,
        progress=_say,
        placed=work_done,
    )
    work_done()
    emit_record(summary, fmt)
