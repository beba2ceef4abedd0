"""Text from a hostile program shown safely: a terminal runs no escape sequence, a CSV
row keeps its cells, a spreadsheet runs no formula (kgagent/textsafe.py)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from click.testing import CliRunner
from kgagent.cli.main import cli

from kgagent.config import Config
from kgagent.memory import EncoderSpec, Memory
from kgagent.textsafe import CsvWriter, visible
from kgagent.view.page_library import table_csv

TITLE = "\x1b]0;PWNED\x07\x1b[2J"  # sets a terminal's title, then clears it
RLO = "abc\u202etxt.exe"  # shown as "abcexe.txt"


def test_visible_writes_controls_and_direction_marks_as_escapes() -> None:
    assert visible(TITLE) == "\\x1b]0;PWNED\\x07\\x1b[2J"
    assert visible(RLO) == "abc\\u202etxt.exe"
    assert visible("a\r\nb\x85") == "a\\r\\nb\\x85"
    assert visible("记忆 ü — plain") == "记忆 ü — plain"


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_a_carriage_return_in_a_cell_keeps_the_row_whole() -> None:
    buf = io.StringIO()
    w = CsvWriter(buf)
    w.writerow(["a\rb", 1])
    w.writerow(["c", 2])
    assert _rows(buf.getvalue()) == [["a\rb", "1"], ["c", "2"]]
    plain = io.StringIO()
    csv.writer(plain, lineterminator="\n").writerow(["a\rb", 1])
    assert plain.getvalue() == "a\rb,1\n"  # what a reader splits (why CsvWriter quotes)


def test_a_spreadsheet_csv_runs_no_formula_but_keeps_numbers() -> None:
    buf = io.StringIO()
    CsvWriter(buf, spreadsheet=True).writerow(
        ['=HYPERLINK("http://x","y")', "+1+cmd|'/C calc'!A0", "@SUM(A1)", "-3.5", -2, "ok"]
    )
    assert _rows(buf.getvalue()) == [
        ['\'=HYPERLINK("http://x","y")', "'+1+cmd|'/C calc'!A0", "'@SUM(A1)", "-3.5", "-2", "ok"]
    ]


def test_the_views_table_download_is_inert() -> None:
    text = table_csv([{"name": "=1+1", "n": -1}], [("name", "Name", ""), ("n", "N", "")])
    assert _rows(text) == [["Name", "N"], ["'=1+1", "-1"]]


def test_query_tables_show_escapes_and_csv_keeps_the_value(tmp_path: Path) -> None:
    mem = tmp_path / "m"
    with Memory.open(mem, Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88))):
        pass
    value = '"\\u001b]0;PWNED\\u0007\\u202e\\r"'  # TOML: ESC ] 0 ; PWNED BEL RLO CR
    args = ["query", "--memory", str(mem), "--param", f"v={value}", "RETURN $v AS v"]
    table = CliRunner().invoke(cli, args)
    assert table.exit_code == 0, table.output
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "\\x1b]0;PWNED\\x07\\u202e\\r" in table.stdout
    as_csv = CliRunner().invoke(cli, [*args, "--format", "csv"])
    assert as_csv.exit_code == 0, as_csv.output
    assert _rows(as_csv.stdout) == [["v"], ["\x1b]0;PWNED\x07\u202e\r"]]  # the data, exact


def test_the_views_rounds_download_is_inert_and_the_plain_csv_exact() -> None:
    from kgagent.rounds import Round, rounds_csv

    r = Round(0, "=cmd.jsonl", "cardgame", 0, "full", 5, "steps", True, 1, 0, 1, 2, 0, 0)
    inert = {row[1] for row in _rows(rounds_csv([r], ["steps"], spreadsheet=True))}
    assert "'=cmd.jsonl" in inert
    plain = {row[1] for row in _rows(rounds_csv([r], ["steps"]))}
    assert "=cmd.jsonl" in plain  # for programs (docs/view.md's table2.csv): the value
