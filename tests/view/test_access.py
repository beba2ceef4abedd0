"""The view answers only the holder of its token (kgagent/view/access.py).

A memory closed with umask 077 kept other users of the machine out of its files, but
`kgagent view` on 127.0.0.1 served its screenshots, crops and CSVs to any local user.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kgagent.errors import ConfigError
from kgagent.view import access
from kgagent.view.app import create_app

from .conftest import serve

TOKEN = "t0k3n-for-the-tests-0123456789abcdef"


@pytest.fixture(scope="module")
def app(played: Path):
    return create_app(played, token=TOKEN)


def _blob(played: Path) -> str:
    png = next((played / "blobs").rglob("*.png"))
    return f"/blob/{png.stem}.png"


def test_a_request_without_the_token_is_refused_everywhere(app, played: Path) -> None:
    c = app.server.test_client()
    for path in (
        "/",
        "/_dash-layout",
        "/download/skills.csv",
        _blob(played),
        "/_dash-dependencies",
    ):
        r = c.get(path)
        assert r.status_code == 403, path
        assert r.get_data(as_text=True) == access.REFUSAL
        assert "Set-Cookie" not in r.headers


@pytest.mark.parametrize(
    "headers,query",
    [
        ({"Authorization": "Bearer wrong-token-0123456789"}, ""),
        ({"Cookie": f"{access.cookie_name(TOKEN)}=wrong-token-0123456789"}, ""),
        ({"Cookie": f"kgagent-view-0000={TOKEN}"}, ""),  # the token under another view's name
        ({}, "?token=wrong-token-0123456789"),
        ({}, f"?tok={TOKEN}"),
    ],
)
def test_a_wrong_token_is_refused(app, headers, query) -> None:
    r = app.server.test_client().get("/" + query, headers=headers)
    assert r.status_code == 403


def test_the_printed_url_sets_a_cookie_that_the_pages_requests_carry(app, played: Path) -> None:
    c = app.server.test_client()
    r = c.get(f"/?token={TOKEN}")
    assert r.status_code == 200
    cookie = r.headers["Set-Cookie"]
    assert cookie.startswith(f"{access.cookie_name(TOKEN)}={TOKEN};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    for path in ("/_dash-layout", "/download/skills.csv", _blob(played)):
        assert c.get(path).status_code == 200, path  # the test client keeps the cookie


def test_a_script_sends_the_token_as_a_bearer_header(app) -> None:
    r = app.server.test_client().get(
        "/download/skills.csv", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert r.status_code == 200 and "Set-Cookie" not in r.headers


def test_the_host_guard_still_comes_first(app) -> None:
    r = app.server.test_client().get(f"/?token={TOKEN}", headers={"Host": "evil.example"})
    assert r.status_code == 400


@pytest.mark.parametrize("bad", ["short", "x" * 257, "has space in it 0123", "ünïcode-0123456789"])
def test_a_token_unfit_for_a_url_or_a_cookie_is_one_line(played: Path, bad: str) -> None:
    with pytest.raises(ConfigError, match="a view token must be 16 to 256 characters"):
        create_app(played, token=bad)


def _start(played: Path, *args: str, env: dict[str, str] | None = None):
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kgagent.cli.main",
            "view",
            "--memory",
            str(played),
            "--port",
            "0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    line = p.stdout.readline()  # the URL, once it listens
    return p, line


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers or {}), timeout=60
        ) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _stop(p: subprocess.Popen) -> str:
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return err


def test_kgagent_view_prints_a_url_with_a_fresh_token_and_answers_only_it(played: Path) -> None:
    p, line = _start(played)
    try:
        assert "?token=" in line, line + (p.stderr.read() if p.poll() is not None else "")
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        base, token = url.split("?token=")
        assert access.TOKEN_RE.fullmatch(token)
        assert _status(base) == 403
        assert _status(url) == 200
        assert _status(base + "download/skills.csv", {"Authorization": f"Bearer {token}"}) == 200
    finally:
        err = _stop(p)
    assert "warning" not in err
    q, line2 = _start(played)
    try:
        assert line2.split("?token=")[1] != token  # a fresh one each time
    finally:
        _stop(q)


def test_the_token_from_the_environment_and_no_token(played: Path) -> None:
    p, line = _start(played, env={"KGAGENT_VIEW_TOKEN": TOKEN})
    try:
        assert line.rstrip().endswith(f"?token={TOKEN} (Ctrl-C stops)")
    finally:
        _stop(p)
    p, line = _start(played, "--no-token")
    try:
        assert "token" not in line
        base = line.split(" on ", 1)[1].split(" ", 1)[0]
        assert _status(base) == 200
    finally:
        err = _stop(p)
    assert "warning: --no-token: every user of this machine can read the memory" in err


def test_a_bad_token_in_the_environment_is_one_line(played: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "kgagent.cli.main", "view", "--memory", str(played), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KGAGENT_VIEW_TOKEN": "short"},
    )
    assert r.returncode != 0
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith("error: KGAGENT_VIEW_TOKEN: a view token must be 16 to 256 characters")
    )
    assert "short" not in r.stderr  # a token is not echoed


def test_a_browser_opens_the_printed_url_and_the_page_draws(played: Path, browser) -> None:
    s = serve(played, token=TOKEN)
    try:
        browser.delete_all_cookies()
        browser.get(s.url + "/")
        assert "asks for its token" in browser.page_source
        browser.get(s.url + f"/?token={TOKEN}")
        end = time.monotonic() + 60
        while time.monotonic() < end and not browser.execute_script(
            "return !!document.querySelector('#g-cy canvas')"
        ):
            time.sleep(0.2)
        assert browser.execute_script("return !!document.querySelector('#g-cy canvas')")
        browser.get(s.url + "/")  # the cookie now opens the page without the token
        assert "asks for its token" not in browser.page_source
    finally:
        browser.delete_all_cookies()
        s.stop()
