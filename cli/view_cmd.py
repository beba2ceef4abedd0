"""`kgagent view`: serve a local, read-only web view of a memory (kgagent/view/)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from kgagent.config import Config
from kgagent.errors import ConfigError

from .common import FiniteRange, config_options, memory_option

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.command("view")
@memory_option
@config_options
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8050,
    show_default=True,
    help="TCP port to listen on (0: any free port; the URL printed says which).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind. The view speaks plain HTTP (its token and the memory travel "
    "unencrypted): keep it on 127.0.0.1 unless the network is yours.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests for host NAME (a name a proxy forwards; repeatable). "
    "Otherwise only the loopback names, the --host address and, bound to another "
    "address, this machine's names are answered (a guard against DNS rebinding).",
)
@click.option(
    "--no-token",
    is_flag=True,
    help="Answer requests without the view's token (behind a proxy that authenticates). "
    "Otherwise only requests that carry it are answered: the printed URL carries a random "
    "one, or $KGAGENT_VIEW_TOKEN's.",
)
@click.option(
    "--refresh",
    "refresh_s",
    type=FiniteRange(min=0.1, max=3600),
    default=1.0,
    show_default=True,
    help="Seconds between rereads of the memory while it changes.",
)
def view_cmd(
    memory: Path,
    config: Config,
    port: int,
    host: str,
    allow_hosts: tuple[str, ...],
    no_token: bool,
    refresh_s: float,
) -> None:
    """Browse the memory in a web browser: SA-KG, library, live run, rounds.

    Read-only: it works beside a running `kgagent play` on the same memory
    (LadybugDB engine) and never writes to it. Only requests that carry the view's
    token are answered (other users of this machine can reach 127.0.0.1 too): open
    the URL it prints.
    """
    try:
        from kgagent.view import access
        from kgagent.view.app import create_app, listen, url
    except ImportError as e:
        raise ConfigError(
            f"kgagent view needs Dash ({e.name or e} is missing): pip install dash dash-cytoscape"
        ) from None
    token = None
    if not no_token:
        given = os.environ.get("KGAGENT_VIEW_TOKEN")
        token = access.checked(given, "KGAGENT_VIEW_TOKEN") if given else access.new_token()
    app = create_app(
        memory, config, refresh_s=refresh_s, host=host, allow_hosts=allow_hosts, token=token
    )
    server = listen(app, host, port)
    if host not in LOOPBACK:
        click.echo(
            f"warning: serving on {host} over plain HTTP: "
            + (
                "anyone who can reach this address can read the memory"
                if token is None
                else "the token and the memory travel unencrypted"
            ),
            err=True,
        )
    elif token is None:
        click.echo("warning: --no-token: every user of this machine can read the memory", err=True)
    click.echo(f"kgagent view of {memory} on {url(host, server.port, token)} (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
