"""Tables in the docs generated from a committed results folder: ``kgagent bench-docs DOC.md``.

A *bench block* in a Markdown file names a results folder (relative to the
repository root) and one section of its report; the lines between its markers are
rendered by :func:`kgagent.bench.report.render_section`, the code that writes
report.md, so a doc's table is the report's table and cannot drift from the runs::

    <!-- bench: docs/results/learning methods env=cardgame -->
    (generated: do not edit)
    <!-- /bench -->

Sections: ``header`` (command, date, machine, versions) and, of one experiment,
environment, judge and round, ``methods``, ``paired``, ``figures``, ``crafter`` and
``rounds``. The keys ``experiment=``, ``env=``, ``judge=`` and ``round=`` say which;
each may be left out when the results have only one. Markers start their line (an
indented one is an error); inside fenced code they are text, not blocks. The folder
lies inside the repository and needs grid.toml, runs.csv and summary.json:
``kgagent bench GRID --export FOLDER`` writes them (docs/bench.md, "Tables in the docs").

Every doc is read and rendered before any is written, and a doc keeps its line endings.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kgagent.bench.report import SECTIONS, Where, render_section
from kgagent.bench.results import Results, load_results
from kgagent.errors import KGAgentError

OPEN = re.compile(r"^<!-- bench:(?P<spec>.*)-->\s*$")
CLOSE = re.compile(r"^<!-- /bench -->\s*$")
INDENTED = re.compile(r"^\s+<!-- (bench:|/bench -->)")
#: A line with its ending (LF or CRLF), or the last line without one.
LINE = re.compile(r"[^\n]*\n|[^\n]+")
#: Section names a block may give: the grid's header, then those of one place.
NAMES = ("header", *SECTIONS)
KEYS = ("experiment", "env", "judge", "round")
#: The files a results folder needs for the docs (``--export`` writes them and a few more).
NEEDED = ("grid.toml", "runs.csv", "summary.json")


class BenchDocsError(KGAgentError):
    """A bench block is malformed, names what the results lack, or is out of date."""


@dataclass(frozen=True)
class Block:
    """One bench block: where it is in its doc, and what it asks for."""

    doc: Path
    line: int  # the opening marker's line, from 1
    spec: str  # the marker's text after "bench:"
    results: str
    section: str
    keys: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass
class Rendered:
    """A doc with its blocks rendered: its text before and after, and the blocks that changed."""

    doc: Path
    text: str
    new_text: str
    blocks: int
    stale: list[Block]


def split_lines(text: str) -> list[str]:
    """The lines of ``text``, each with its own ending (LF or CRLF; the last may have none)."""
    return LINE.findall(text)


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def find_blocks(text: str, doc: Path) -> list[tuple[Block, int, int]]:
    """Every block of ``text``, with the line indices of its two markers (:func:`split_lines`)."""
    out: list[tuple[Block, int, int]] = []
    opened: tuple[Block, int] | None = None
    fence = False
    for i, line in enumerate(map(_content, split_lines(text))):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if fence:
            continue
        if INDENTED.match(line):
            raise BenchDocsError(
                f"{doc}:{i + 1}: an indented bench marker; start it at the beginning of its "
                "line (an example belongs in fenced code)"
            )
        m = OPEN.match(line)
        if m:
            if opened is not None:
                raise BenchDocsError(
                    f"{opened[0].where}: bench block not closed before line {i + 1}; "
                    "end it with <!-- /bench -->"
                )
            opened = (_parse(m["spec"].strip(), doc, i + 1), i)
        elif CLOSE.match(line):
            if opened is None:
                raise BenchDocsError(f"{doc}:{i + 1}: <!-- /bench --> without a block to close")
            out.append((opened[0], opened[1], i))
            opened = None
    if opened is not None:
        raise BenchDocsError(
            f"{opened[0].where}: bench block not closed; end it with <!-- /bench -->"
        )
    return out


def _parse(spec: str, doc: Path, line: int) -> Block:
    where = f"{doc}:{line}"
    words = spec.split()
    if len(words) < 2:
        raise BenchDocsError(
            f"{where}: a bench block names a results folder and a section: "
            "<!-- bench: FOLDER SECTION [key=value …] -->"
        )
    results, section, *rest = words
    norm = os.path.normpath(results)
    if os.path.isabs(results) or norm == ".." or norm.startswith("../"):
        raise BenchDocsError(
            f"{where}: results folder {results!r} is not inside the repository; name it "
            "relative to the repository root, e.g. docs/results/NAME"
        )
    if section not in NAMES:
        raise BenchDocsError(f"{where}: unknown section {section!r}; known: {', '.join(NAMES)}")
    keys: dict[str, str] = {}
    for word in rest:
        key, eq, value = word.partition("=")
        if not eq or key not in KEYS or not value:
            raise BenchDocsError(
                f"{where}: {word!r} is not key=value with a key of {', '.join(KEYS)}"
            )
        keys[key] = value
    return Block(doc, line, spec, results, section, keys)


def render_block(block: Block, res: Results) -> str:
    """The block's text from the results (one section of the report); never empty."""
    if block.section == "header":
        text = render_section(res, "header")
    else:
        at = _place(block, res)
        text = render_section(res, block.section, at)
        if not text:
            raise BenchDocsError(
                f"{block.where}: the results have no {block.section} section for experiment "
                f"{at.exp.name}, env {at.env}, judge {at.judge}, round {at.rnd}"
            )
    return text


def _place(block: Block, res: Results) -> Where:
    """The experiment, environment, judge and round a block names (or the only one)."""
    exps = {e.name: e for e in res.grid.experiments}
    exp = exps[_pick(block, "experiment", list(exps))]
    env = _pick(block, "env", exp.envs)
    judge = _pick(block, "judge", exp.judges)
    rnd = 0
    if block.section != "rounds":  # the rounds table spans every round
        rnd = int(_pick(block, "round", [str(r) for r in range(exp.rounds)]))
    return Where(exp, env, judge, rnd)


def _pick(block: Block, key: str, known: list[str]) -> str:
    value = block.keys.get(key)
    if value is None:
        if len(known) == 1:
            return known[0]
        raise BenchDocsError(
            f"{block.where}: the results have more than one {key} ({', '.join(known)}); "
            f"name one with {key}=…"
        )
    if value not in known:
        raise BenchDocsError(
            f"{block.where}: the results have no {key} {value!r}; known: {', '.join(known)}"
        )
    return value


def update_doc(
    doc: Path, root: Path | None = None, *, write: bool = True
) -> tuple[int, list[Block]]:
    """Render every block of ``doc``; returns (blocks, the stale ones), writing if ``write``.

    Folders are relative to ``root``: by default the nearest folder above the doc
    that holds pyproject.toml or .git (the repository).
    """
    r = render_doc(doc, root)
    if write:
        _write(r)
    return r.blocks, r.stale


def update_docs(docs: list[Path], root: Path | None = None) -> list[Rendered]:
    """Render every block of every doc, then write the docs that changed: a doc that
    cannot be rendered stops the command before any doc is written."""
    rendered = [render_doc(doc, root) for doc in docs]
    for r in rendered:
        _write(r)
    return rendered


def render_doc(doc: Path, root: Path | None = None) -> Rendered:
    """``doc`` with every block rendered from its results; nothing is written."""
    text = _read(doc)
    root = root or repository_root(doc)
    lines = split_lines(text)
    newline = _newline(lines)
    loaded: dict[str, Results] = {}
    stale: list[Block] = []
    out: list[str] = []
    done = 0
    blocks = find_blocks(text, doc)
    for block, start, end in blocks:
        if block.results not in loaded:
            loaded[block.results] = _load(block, root)
        body = ["", *render_block(block, loaded[block.results]).splitlines(), ""]
        if [_content(line) for line in lines[start + 1 : end]] != body:
            stale.append(block)
        out += [*lines[done : start + 1], *(b + newline for b in body)]
        done = end
    out += lines[done:]
    return Rendered(doc, text, "".join(out), len(blocks), stale)


def _newline(lines: list[str]) -> str:
    """The doc's line ending: its first line's (CRLF or LF)."""
    first = next((line for line in lines if line.endswith("\n")), "\n")
    return "\r\n" if first.endswith("\r\n") else "\n"


def _read(doc: Path) -> str:
    data = doc.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BenchDocsError(
            f"{doc}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "bench-docs reads and writes Markdown in UTF-8"
        ) from None


def _write(r: Rendered) -> None:
    if r.stale:
        r.doc.write_bytes(r.new_text.encode("utf-8"))


def _load(block: Block, root: Path) -> Results:
    folder = root / block.results
    missing = [n for n in NEEDED if not (folder / n).is_file()]
    if missing:
        raise BenchDocsError(
            f"{block.where}: no results folder {block.results} under {root} (it needs "
            f"{', '.join(NEEDED)}); write one with kgagent bench GRID --export {block.results}"
        )
    try:
        return load_results(folder)
    except (KGAgentError, OSError, ValueError) as e:
        raise BenchDocsError(f"{block.where}: results {block.results}: {e}") from None


def repository_root(path: Path) -> Path:
    """The nearest folder above ``path`` with pyproject.toml or .git, else the current one."""
    for parent in path.resolve().parents:
        if (parent / "pyproject.toml").is_file() or (parent / ".git").exists():
            return parent
    return Path.cwd()


def check_docs(docs: list[Path], root: Path | None = None) -> dict[Path, int]:
    """The blocks of each doc, all current; else :class:`BenchDocsError` names the first stale one."""
    counts: dict[Path, int] = {}
    stale: list[Block] = []
    for doc in docs:
        counts[doc], s = update_doc(doc, root, write=False)
        stale += s
    if stale:
        more = f" (and {len(stale) - 1} more)" if len(stale) > 1 else ""
        names = " ".join(dict.fromkeys(str(b.doc) for b in stale))
        raise BenchDocsError(
            f"{stale[0].where}: bench block `{stale[0].spec}` is out of date{more}; "
            f"run: kgagent bench-docs {names}"
        )
    return counts
