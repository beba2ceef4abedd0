"""The view answers only the hosts it serves: a page using DNS rebinding reads nothing."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgagent.view.hosts import HostPolicy, host_name

# every kind of route: a page, Dash's own endpoints and scripts, the view's downloads
ROUTES = (
    "/",
    "/library",
    "/_dash-layout",
    "/_dash-dependencies",
    "/download/rounds.csv",
    "/frame/0/3.png",
    "/assets/nothing.css",
    "/no-such-page",
)


@pytest.fixture(scope="module")
def app(played: Path):
    from kgagent.view.app import create_app

    return create_app(played, refresh_s=0.0)


def _script(client) -> str:
    """The path of one of Dash's own scripts, as the page names it."""
    html = client.get("/", headers={"Host": "127.0.0.1"}).data.decode()
    start = html.index("/_dash-component-suites/")
    return html[start : html.index('"', start)]


def test_a_request_for_another_host_is_refused_on_every_route(app) -> None:
    client = app.server.test_client()
    routes = (*ROUTES, _script(client))
    for path in routes:
        r = client.get(path, headers={"Host": "evil.example"})
        assert r.status_code == 400, path
        assert r.mimetype == "text/plain", path
        body = r.data.decode()
        assert body.count("\n") == 1 and body.endswith("\n"), body
        assert "'evil.example'" in body and "--allow-host evil.example" in body, body
        assert b"kgagent-memory" not in r.data and b"_dash-config" not in r.data
    r = client.get("/", headers={"Host": "evil.example:8050"})
    assert r.status_code == 400 and "--allow-host evil.example\n" in r.data.decode()
    r = client.post(
        "/_dash-update-component", json={"output": "x.children"}, headers={"Host": "evil.example"}
    )
    assert r.status_code == 400
    # a name that merely contains a loopback name is another name
    for host in ("localhost.evil.example", "127.0.0.1.evil.example", "evil.example:80@localhost"):
        assert client.get("/", headers={"Host": host}).status_code == 400, host


def test_the_loopback_names_are_served(app) -> None:
    client = app.server.test_client()
    script = _script(client)
    for host in ("127.0.0.1:18051", "127.0.0.1", "localhost", "LOCALHOST:8050", "[::1]:8050"):
        for path in ("/", "/download/rounds.csv", "/_dash-layout", script):
            r = client.get(path, headers={"Host": host})
            assert r.status_code == 200, (host, path)
    assert client.get("/").status_code == 200  # the test client's own Host: localhost


def test_an_allowed_host_is_served(played: Path) -> None:
    from kgagent.view.app import create_app

    app = create_app(played, refresh_s=0.0, allow_hosts=("view.example.org", "Proxy.Lan:443"))
    client = app.server.test_client()
    for host in ("view.example.org", "view.example.org:8443", "proxy.lan"):
        assert client.get("/", headers={"Host": host}).status_code == 200, host
        assert client.get("/download/rounds.csv", headers={"Host": host}).status_code == 200
    assert client.get("/", headers={"Host": "evil.example"}).status_code == 400


def test_the_policy_follows_the_bound_address() -> None:
    me = socket.gethostname().lower()
    loop = HostPolicy("127.0.0.1")
    assert loop.allows("localhost:1") and loop.allows("[::1]") and loop.allows("127.0.0.1:8050")
    assert not loop.allows("192.168.1.7") and not loop.allows("evil.example")
    assert loop.allows(None)  # no Host at all (HTTP/1.0): not a browser, nothing rebound
    lan = HostPolicy("192.168.1.7")
    assert lan.allows("192.168.1.7:8050") and lan.allows(me) and lan.allows("localhost")
    assert not lan.allows("10.0.0.1") and not lan.allows("evil.example")
    every = HostPolicy("0.0.0.0")  # every address of this machine, by address or by name
    assert every.allows("10.0.0.1:8050") and every.allows("[fe80::1]:8050")
    assert every.allows(me) and every.allows(socket.getfqdn()) and every.allows("0.0.0.0:8050")
    assert not every.allows("evil.example") and not every.allows("10.0.0.1.evil.example")
    assert HostPolicy("::").allows("192.168.1.7")
    assert HostPolicy("127.0.0.1", ["a.example"]).allows("A.example.:99")
    assert host_name("[::1]:8050") == "::1" and host_name("Example.ORG.:80") == "example.org"


def test_the_command_passes_host_and_allow_host_to_the_app(played: Path, monkeypatch) -> None:
    """``kgagent view --host 0.0.0.0 --allow-host NAME``: the app it serves answers the
    machine's addresses and names and NAME, and nothing else."""
    from kgagent.cli.view_cmd import view_cmd

    from kgagent.view import app as view_app

    served = {}

    class Server:
        port = 18051

        def serve_forever(self) -> None:
            raise KeyboardInterrupt

        def server_close(self) -> None:
            pass

    def listen(app, host, port):
        served.update(app=app, host=host)
        return Server()

    monkeypatch.setattr(view_app, "listen", listen)
    args = ["--memory", str(played), "--host", "0.0.0.0", "--allow-host", "kg.example"]
    result = CliRunner().invoke(view_cmd, args)
    assert result.exit_code == 0, result.output
    client = served["app"].server.test_client()
    token = result.output.split("?token=", 1)[1].split()[0]
    auth = {"Authorization": f"Bearer {token}"}
    for host in ("kg.example", "192.168.1.7:18051", socket.gethostname(), "localhost:18051"):
        assert client.get("/", headers={"Host": host, **auth}).status_code == 200, host
    r = client.get("/", headers={"Host": "evil.example:18051", **auth})
    assert r.status_code == 400 and b"--allow-host evil.example" in r.data
