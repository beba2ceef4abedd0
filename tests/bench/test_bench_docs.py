"""Tables in the docs generated from a results folder: `kgagent bench --export` writes a small
folder, `--report-only` writes it again, and `kgagent bench-docs` renders a doc's blocks
from it with the report's own code, or (`--check`) names the block that is out of date."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kgagent.bench import BenchOptions, load_grid, run_grid
from kgagent.bench.docs import BenchDocsError, check_docs, update_doc, update_docs
from kgagent.bench.results import kept_records, load_results, write_results

REPO = Path(__file__).resolve().parents[2]
GRID = """
name = "d"
envs = ["cardgame"]
steps = 10
set = ["perception.encoder=pixel", "perception.segmenter=opencv"]
metrics = ["progression", "score", "err", "nodes", "skill_edges"]

[[experiment]]
name = "m"
methods = ["full", "random"]
seeds = [0, 1]
"""
#: What --export keeps: everything but cells/, plots/ and merged/.
KEPT = {
    "grid.toml",
    "cells.csv",
    "runs.csv",
    "stats.csv",
    "paired.csv",
    "summary.json",
    "report.md",
}
DOC = """# Results

<!-- bench: results/kept header -->
<!-- /bench -->

Text between blocks stays.

<!-- bench: results/kept methods env=cardgame -->
| a table typed by hand |
<!-- /bench -->

<!-- bench: results/kept paired -->
<!-- /bench -->

```markdown
<!-- bench: results/kept methods -->   (an example in fenced code is not a block)
```
"""


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository holding a tiny grid's kept results in results/kept (4 ten-step card runs)."""
    root = tmp_path_factory.mktemp("repo")
    (root / "pyproject.toml").write_text("")
    spec = root / "grid.toml"
    spec.write_text(GRID)
    opts = BenchOptions(out=root / "full", export=root / "results" / "kept", progress=False)
    run_grid(load_grid(spec), opts)
    return root


def _cli() -> click.Group:
    from kgagent.cli.bench_cmd import bench_cmd, bench_docs_cmd
    from kgagent.cli.main import KGAgentGroup

    @click.group(cls=KGAgentGroup)
    def top() -> None:
        pass

    top.add_command(bench_cmd, "bench")
    top.add_command(bench_docs_cmd, "bench-docs")
    return top


def _doc(root: Path, text: str = DOC) -> Path:
    doc = root / "docs" / "page.md"
    doc.parent.mkdir(exist_ok=True)
    doc.write_text(text)
    return doc


def test_export_is_small_and_report_only_writes_it_again(kept: Path) -> None:
    folder = kept / "results" / "kept"
    assert {p.name for p in folder.iterdir()} == KEPT
    assert "![" not in (folder / "report.md").read_text()  # no plots, no links to them
    again = kept / "again"
    shutil.copytree(folder, again)
    summary = run_grid(
        load_grid(kept / "grid.toml"),
        BenchOptions(out=again, report_only=True, plots=False, progress=False),
    )
    assert (summary["ran"], summary["failed"], summary["not_run"]) == (0, 0, 0)
    assert {p.name for p in again.iterdir()} == KEPT
    for name in KEPT - {"summary.json"}:
        assert (again / name).read_text() == (folder / name).read_text(), name


def test_kept_folder_keeps_episodes_for_the_crafter_section(kept: Path) -> None:
    """A Crafter run's achievements per episode travel in summary.json (runs.csv has numbers)."""
    res = load_results(kept / "results" / "kept")
    run = res.runs[0]
    key = tuple(run[k] for k in ("experiment", "env", "judge", "method", "seed", "series", "round"))
    res.episodes = {key: [["collect_wood"], []]}
    write_results(res, kept / "episodes", plots=False)
    assert load_results(kept / "episodes").episodes == res.episodes
    records = kept_records(kept / "episodes")
    assert len(records) == 4 and all(len(r["runs"]) == 1 for r in records.values())
    runs = [r for rec in records.values() for r in rec["runs"] if r["figures"].get("episodes")]
    assert [r["figures"]["episodes"] for r in runs] == [[["collect_wood"], []]]


def test_blocks_are_regenerated_from_the_report_sections(kept: Path) -> None:
    doc = _doc(kept)
    assert update_doc(doc)[0] == 3
    text = doc.read_text()
    report = (kept / "results" / "kept" / "report.md").read_text()
    assert "| a table typed by hand |" not in text and "Text between blocks stays." in text
    methods = text.split("<!-- bench: results/kept methods env=cardgame -->\n")[1]
    methods = methods.split("<!-- /bench -->")[0].strip()
    assert methods.startswith("| method | progression per seed |") and methods in report
    assert "| full − random |" in text and "- versions: python " in text
    assert "<!-- bench: results/kept methods -->   (an example" in text  # fenced: untouched
    assert update_doc(doc) == (3, []) and doc.read_text() == text


def test_check_names_the_stale_block(kept: Path) -> None:
    doc = _doc(kept)
    update_doc(doc)
    cli = _cli()
    r = CliRunner().invoke(cli, ["bench-docs", str(doc), "--check", "--format", "json"])
    assert r.exit_code == 0, r.output
    fresh = doc.read_text()
    doc.write_text(fresh.replace("| full |", "| full (typed) |", 1))
    line = fresh.splitlines().index("<!-- bench: results/kept methods env=cardgame -->") + 1
    r = CliRunner().invoke(cli, ["bench-docs", str(doc), "--check"])
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1
    assert (
        f"{doc}:{line}: bench block `results/kept methods env=cardgame` is out of date" in r.output
    )
    assert f"run: kgagent bench-docs {doc}" in r.output
    r = CliRunner().invoke(cli, ["bench-docs", str(doc)])
    assert r.exit_code == 0 and doc.read_text() == fresh


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ("results/kept nosuch", "unknown section 'nosuch'; known: header, methods, paired,"),
        ("results/gone methods", "no results folder results/gone under "),
        ("results/kept methods env=civgame", "no env 'civgame'; known: cardgame"),
        ("results/kept crafter", "the results have no crafter section for experiment m"),
        ("results/kept methods seed=1", "'seed=1' is not key=value with a key of experiment,"),
        ("results/kept", "a bench block names a results folder and a section"),
        ("/tmp/x methods", "results folder '/tmp/x' is not inside the repository; name it"),
        ("../x methods", "results folder '../x' is not inside the repository"),
        ("results/../../x methods", "results folder 'results/../../x' is not inside"),
    ],
)
def test_bad_blocks_are_one_line(kept: Path, block: str, message: str) -> None:
    doc = _doc(kept, f"<!-- bench: {block} -->\n<!-- /bench -->\n")
    with pytest.raises(BenchDocsError, match="^" + str(doc) + ":1: "):
        update_doc(doc)
    r = CliRunner().invoke(_cli(), ["bench-docs", str(doc), "--check"])
    assert r.exit_code == 1 and r.output.startswith("error: ") and message in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1


def test_unclosed_and_stray_markers(tmp_path: Path) -> None:
    doc = _doc(tmp_path, "<!-- bench: x header -->\n")
    with pytest.raises(BenchDocsError, match="page.md:1: bench block not closed"):
        update_doc(doc)
    doc.write_text("text\n<!-- /bench -->\n")
    with pytest.raises(BenchDocsError, match="page.md:2: <!-- /bench --> without a block"):
        update_doc(doc)


def test_indented_markers_are_named_by_line(tmp_path: Path) -> None:
    doc = _doc(tmp_path, "text\n  <!-- bench: results/kept header -->\n<!-- /bench -->\n")
    with pytest.raises(BenchDocsError, match=r"page.md:2: an indented bench marker; start it"):
        update_doc(doc)
    doc.write_text("<!-- bench: results/kept header -->\n   <!-- /bench -->\n")
    with pytest.raises(BenchDocsError, match=r"page.md:2: an indented bench marker"):
        update_doc(doc)
    doc.write_text("```\n  <!-- bench: results/kept header -->\n```\n")  # fenced: text
    assert update_doc(doc) == (0, [])


def test_a_doc_that_is_not_utf8_is_named(kept: Path) -> None:
    bad = kept / "docs" / "bad.md"
    bad.parent.mkdir(exist_ok=True)
    bad.write_bytes(b"\xff<!-- bench: results/kept header -->\n")
    r = CliRunner().invoke(_cli(), ["bench-docs", str(bad)])
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.startswith(f"error: {bad}: not UTF-8 text (byte 0xff at offset 0)")


def test_every_doc_is_checked_before_any_is_written(kept: Path) -> None:
    ok = _doc(kept)
    before = ok.read_bytes()
    bad = kept / "docs" / "bad.md"
    bad.write_text("<!-- bench: results/gone methods -->\n<!-- /bench -->\n")
    r = CliRunner().invoke(_cli(), ["bench-docs", str(ok), str(bad)])
    assert r.exit_code == 1 and f"{bad}:1: no results folder results/gone" in r.output
    assert ok.read_bytes() == before
    with pytest.raises(BenchDocsError):
        update_docs([ok, bad])
    assert ok.read_bytes() == before
    assert [r.blocks for r in update_docs([ok])] == [3] and ok.read_bytes() != before


def test_a_crlf_doc_keeps_its_line_endings(kept: Path) -> None:
    lf = _doc(kept)
    update_doc(lf)
    crlf = kept / "docs" / "crlf.md"
    crlf.write_bytes(DOC.replace("\n", "\r\n").encode())
    r = CliRunner().invoke(_cli(), ["bench-docs", str(crlf)])
    assert r.exit_code == 0, r.output
    data = crlf.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n") and data.endswith(b"\r\n")
    assert data.replace(b"\r\n", b"\n") == lf.read_bytes()
    assert update_doc(crlf) == (3, [])  # current as it is


def test_docs_bench_blocks_are_current() -> None:
    """Every bench block of docs/*.md shows what its committed results give."""
    check_docs(sorted((REPO / "docs").glob("*.md")), REPO)


def test_docs_learning_grid_is_the_learning_grid_without_rounds() -> None:
    """benchmarks/grids/docs-learning.toml: 2 games × 3 methods × 10 seeds, learning.toml's set."""
    g = load_grid(REPO / "benchmarks" / "grids" / "docs-learning.toml")
    learning = load_grid(REPO / "benchmarks" / "grids" / "learning.toml")
    (exp,) = g.experiments
    assert (exp.envs, exp.methods, exp.seeds) == (
        ["cardgame", "civgame"],
        ["full", "no_graph", "random"],
        list(range(10)),
    )
    assert (exp.rounds, exp.steps, exp.reference) == (1, 300, "full")
    assert exp.overrides == learning.experiments[0].overrides
    assert g.metrics[0] == "progression" and set(g.metrics) <= set(learning.metrics)
