"""A Turkish locale: the engines upper-case function names with the C library, where
``i`` becomes ``İ``; every query calling a function with an ``i`` failed ("function
LiST_SORT does not exist"), and with it play, export and the view."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kgagent.memory import ctype_locale

SOURCE = Path("/usr/share/i18n/locales/tr_TR")


@pytest.fixture(scope="module")
def turkish(tmp_path_factory) -> dict[str, str]:
    if not SOURCE.is_file() or not shutil.which("localedef"):
        pytest.skip("no tr_TR locale source (Debian package locales) or localedef")
    loc = tmp_path_factory.mktemp("locales")
    subprocess.run(
        ["localedef", "-i", "tr_TR", "-f", "UTF-8", str(loc / "tr_TR.UTF-8")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
    return {**env, "LOCPATH": str(loc), "LANG": "tr_TR.UTF-8", "LC_ALL": "tr_TR.UTF-8"}


def _kgagent(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kgagent.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_the_locale_is_turkish_in_the_child(turkish) -> None:
    """The fixture's locale does map i to İ (else the test below proves nothing)."""
    code = "import locale; locale.setlocale(locale.LC_CTYPE, ''); from kgagent.memory import ctype_locale as c; print(c._maps_i_to_dotted())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=turkish)
    assert out.stdout.strip() == "True", out.stderr


def test_play_and_a_query_with_functions_work_in_a_turkish_locale(turkish, tmp_path) -> None:
    mem = str(tmp_path / "m")
    p = _kgagent(turkish, "play", "--env", "cardgame", "--steps", "3", "--memory", mem, "--quiet")
    assert p.returncode == 0, p.stderr
    q = _kgagent(
        turkish,
        "query",
        "--memory",
        mem,
        "--format",
        "json",
        "RETURN list_sort([2, 1]) AS x, min(1) AS m",
    )
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout) == [{"x": [1, 2], "m": 1}]


def test_an_ascii_case_locale_is_left_alone() -> None:
    import locale

    before = locale.setlocale(locale.LC_CTYPE)
    if ctype_locale._maps_i_to_dotted():
        pytest.skip("this process runs in a dotted-i locale")
    assert ctype_locale.ascii_case_mapping() is None
    assert locale.setlocale(locale.LC_CTYPE) == before
