"""`kgagent play`: run the agent on an environment and print the run's summary.

No logic lives here: options become a :class:`~kgagent.config.Config`, and
:class:`kgagent.agent.runner.Runner` does the rest. With no arguments it plays
the built-in card game with the offline brain, weight-free perception where no
weights are configured, and the default memory. The whole configuration is
validated before the memory is opened.
"""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import Any

import click

from kgagent.config import ABLATIONS, Config
from kgagent.config_fields import MAX_INT
from kgagent.envs.launch import private_display_wanted
from kgagent.envs.registry import ENVS, check_env
from kgagent.errors import ConfigError
from kgagent.memory.merge_place import leftovers_warning
from kgagent.terminal import silence_gone_outputs, tell

from .common import NonEmptyPath, common_options, env_name, mark_writes, work_done
from .output import emit_record


def _usage(message: str) -> click.UsageError:
    return click.UsageError(message, click.get_current_context(silent=True))


def _refuse_ignored(env_name: str | None, cfg: Config, **desktop_options: str | None) -> None:
    """Desktop options with another environment would be dropped without a word."""
    given = [f"--{k}" for k, v in desktop_options.items() if v]
    env = env_name or cfg.run.env
    if given and env != "desktop":
        playing = f"--env {env}" if env_name else f"{env} (run.env)"
        raise _usage(
            f"{' and '.join(given)} {'applies' if len(given) == 1 else 'apply'} to --env "
            f"desktop only, and this run plays {playing}: leave "
            f"{'it' if len(given) == 1 else 'them'} out, or give --env desktop"
        )


def _refuse_conflicts(cfg: Config, **given: str | None) -> None:
    """Targets that exclude each other, and a --screen that no private Xvfb would use:
    either would otherwise be dropped without a word. ``cfg`` holds the options and the
    config's values; ``given``: the options given, so that a message names each value
    where it came from (``--window`` or ``desktop.window``)."""
    d = cfg.desktop
    if cfg.run.env != "desktop":
        return
    name = {k: f"--{k}" if given.get(k) else f"desktop.{k}" for k in ("window", "region", "launch")}
    if d.window and d.region:
        raise _usage(
            f"{name['window']} and {name['region']} exclude each other: bind to a window "
            "or to a region of the screen, not both"
        )
    if d.launch and d.region:
        raise _usage(
            f"{name['launch']} and {name['region']} exclude each other: a launched program "
            "is bound to its own window (add --window to say which of its windows)"
        )
    if d.display == "new" and not d.launch:
        raise _usage(
            f"{'--display ' if given.get('display') else 'desktop.display='}new starts an "
            "empty private Xvfb, where only a program kgagent launches has a window: add "
            "--launch CMD, or name the display the program is on (--display :N)"
        )
    if given.get("screen") and not private_display_wanted(d.display, d.launch):
        if d.display:
            why = f"this run uses the display {d.display}"
        elif os.environ.get("DISPLAY"):
            why = f"this run uses the display {os.environ['DISPLAY']} ($DISPLAY)"
        else:
            why = "only --launch starts one (here: no display at all)"
        raise _usage(
            f"--screen sizes a private Xvfb, and {why}: leave --screen out, or start the "
            "program on a private Xvfb of that size with --launch CMD --display new"
        )


@click.command("play")
@click.option(
    "--env",
    "env_name",
    default=None,
    callback=env_name,
    metavar="ENV",
    help=f"Environment to play: {', '.join(ENVS)} (default: run.env, the built-in card game).",
)
@click.option(
    "--window",
    default=None,
    help="desktop: bind to the window with this title, class:NAME, title:TEXT or pid:N.",
)
@click.option("--region", default=None, metavar="X,Y,W,H", help="desktop: bind to a screen region.")
@click.option(
    "--launch",
    default=None,
    metavar="CMD",
    help="desktop: start CMD, bind to its first window, restart it when it exits, stop it at the end.",
)
@click.option(
    "--display",
    default=None,
    metavar="DISPLAY|new",
    help="desktop: the X display (default $DISPLAY; without one, --launch starts a private Xvfb).",
)
@click.option(
    "--screen",
    default=None,
    metavar="WxH",
    help="desktop: size of a private Xvfb's screen (default: desktop.screen_size, 1280x800).",
)
@click.option(
    "--steps",
    type=click.IntRange(min=0, max=MAX_INT),
    default=None,
    help="Steps to run (default: run.steps).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=MAX_INT),
    default=None,
    help="Seed of the game and of the agent (default: run.seed).",
)
@click.option(
    "--brain-url",
    default=None,
    help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (brain.base_url; wins over "
    "--set). Default: $OPENAI_BASE_URL, else the OpenAI API when $OPENAI_API_KEY is set.",
)
@click.option(
    "--brain-model", default=None, help="Model name at the endpoint (brain.model; wins over --set)."
)
@click.option(
    "--ablation",
    type=click.Choice(ABLATIONS),
    default=None,
    help="Run an ablation: Table 3's, no_graph (the Bottom-Up Agent) or random "
    "(default: run.ablation, full).",
)
@click.option(
    "--record",
    type=NonEmptyPath(file_okay=False),
    default=None,
    help="Save the screenshot after every step into this directory.",
)
@click.option(
    "--log-dir",
    type=NonEmptyPath(file_okay=False),
    default=None,
    help="Where the JSONL step log goes (default: <memory>/runs).",
)
@click.option(
    "--quiet",
    is_flag=True,
    help="No progress bar. Without it: a redrawn bar on a terminal; a plain line every "
    "30 s where stderr is a pipe or a file, or TERM=dumb (a screen reader's shell).",
)
@common_options()
def play_cmd(
    env_name: str | None,
    window: str | None,
    region: str | None,
    launch: str | None,
    display: str | None,
    screen: str | None,
    steps: int | None,
    seed: int | None,
    brain_url: str | None,
    brain_model: str | None,
    ablation: str | None,
    record: str | None,
    log_dir: str | None,
    quiet: bool,
    memory: Path,
    config: Config,
    fmt: str,
) -> None:
    """Let the agent play an environment (--env), learning into the memory, and print the
    run's summary."""
    mark_writes()
    from kgagent.agent.runner import Runner

    cfg = config
    for flag, given in (("--window", window), ("--region", region), ("--launch", launch)):
        if given is not None and not given.strip():
            # an unset shell variable ("--launch $PROG"): say so, not "no X display"
            raise ConfigError(f"{flag} is empty: give it a value, or leave it out")
    if region:
        cfg.set_dotted(f"desktop.region={region}")
    if screen:
        cfg.set_dotted(f"desktop.screen_size={screen.lower().replace('x', ',')}")
    if (window or region or launch) and not env_name:
        env_name = "desktop"
    _refuse_ignored(
        env_name, cfg, window=window, region=region, launch=launch, display=display, screen=screen
    )
    for dotted, value in (
        ("run.env", env_name),
        ("desktop.window", window),
        ("desktop.launch", launch),
        ("desktop.display", display),
        ("run.steps", steps),
        ("run.seed", seed),
        ("brain.base_url", brain_url),
        ("brain.model", brain_model),
        ("run.ablation", ablation),
        ("run.record", record),
        ("run.log_dir", log_dir),
    ):
        if value is not None and value != "":
            section, name = dotted.split(".")
            setattr(getattr(cfg, section), name, value)
    _refuse_conflicts(
        cfg, window=window, region=region, launch=launch, display=display, screen=screen
    )
    cfg.validate()  # before the memory is opened: a bad value writes nothing
    check_env(cfg.run.env)  # an env that cannot be built (gym:NoSuch-v0) creates no memory
    if cfg.run.env == "desktop" and cfg.desktop.launch:
        from kgagent.envs.launch import program_argv

        program_argv(cfg.desktop.launch)  # a command that cannot be split, in one line
    warning = leftovers_warning(Path(memory))
    if warning:
        tell(warning)
    runner = Runner(cfg, memory_path=memory, progress=not quiet)
    try:
        summary = runner.run()
    except KeyboardInterrupt:  # a second Ctrl-C: the run was written and closed first
        if runner.last_summary is None:
            raise
        summary = runner.last_summary
    except Exception:
        if runner.last_summary is not None:  # the run had started: what it did, then the error
            _emit_summary(runner.last_summary, fmt)
        raise
    work_done()  # the run is written and closed: a signal now has nothing to stop
    _emit_summary(summary, fmt)
    if runner.stop_signal is not None:
        # stopped by a signal, cleanly: the shell's code for it, so a script can tell
        sys.exit(128 + runner.stop_signal)


def _emit_summary(summary: Any, fmt: str) -> None:
    """The run's summary on standard output; the run is over and its step log holds the
    summary, so a reader that has gone (``kgagent play | head -1``) changes nothing."""
    try:
        emit_record(summary.to_dict(), fmt, table=summary.format_table())
        sys.stdout.flush()
    except OSError as e:
        if e.errno not in (errno.EPIPE, errno.EIO) or not silence_gone_outputs():
            raise
