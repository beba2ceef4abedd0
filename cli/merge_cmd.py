"""`kgagent memory merge SRC... --into DEST`: fold memories (directories or archives) into one.

No logic lives here: it calls :func:`kgagent.memory.merge.merge_memories`. The rules are
in docs/memory.md, "Merging memories".
"""

from __future__ import annotations

from pathlib import Path

import click
from kgagent.cli.common import NonEmptyPath, common_options, mark_writes, work_done
from kgagent.cli.output import emit_record

from kgagent.config import Config
from kgagent.terminal import tell


def _say(msg: str) -> None:
    tell(msg)  # a reader gone from the pipe does not stop the work


@click.command("merge")
@click.argument("sources", nargs=-1, required=True, type=NonEmptyPath(path_type=Path))
@click.option(
    "--into",
    "into",
    type=NonEmptyPath(file_okay=False, path_type=Path),
    default=None,
    help="The memory to merge into (created when absent). Default: the memory --memory names.",
)
@common_options()
def merge_cmd(
    sources: tuple[Path, ...], into: Path | None, memory: Path, config: Config, fmt: str
) -> None:
    """Merge the memories SOURCES (directories or exported .tar.gz archives) into one.

    States within θ_merge of a destination state become that state, objects,
    skills, clusters and skill edges are matched and their counts added, and every
    merged node records the memory it came from (its `origin`). The merge is built
    beside the destination, checked, and only then put in its place; merging the
    same memory twice changes nothing.
    """
    mark_writes()
    from kgagent.memory.merge import merge_memories

    summary = merge_memories(list(sources), into or memory, config, progress=_say, placed=work_done)
    emit_record(summary, fmt)
