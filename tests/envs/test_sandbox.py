"""A launched program in the sandbox docs/games.md advises ("Files the program can reach"):
bubblewrap with the file system read-only and a private /tmp. The agent still binds to its
window and acts on it, and the program (so the agent, through its dialogs) writes none of
the files outside."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from polling import wait_until

from kgagent.actions import Action
from kgagent.config import DesktopConfig

pytestmark = pytest.mark.desktop
ROOT = Path(__file__).resolve().parents[2]
SDL_APP = Path(__file__).parent / "pygame_app.py"


def _bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"]
    return subprocess.run(probe, capture_output=True).returncode == 0


@pytest.mark.skipif(
    not _bwrap_works(),
    reason="bubblewrap is not installed, or cannot make a namespace here (apt-get install "
    "bubblewrap; a container may forbid user namespaces)",
)
def test_a_sandboxed_program_is_bound_and_acted_on_and_writes_nothing_outside(
    xvfb: str, tmp_path: Path
) -> None:
    from kgagent.envs.desktop import DesktopEnv, DesktopOptions

    kept = tmp_path / "yours"  # a folder of the user's, seen by the program read-only
    kept.mkdir()
    title = f"kg-sandboxed-{tmp_path.name}"
    program = (
        f"touch {shlex.quote(str(kept / 'written'))}; "
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(SDL_APP))} {shlex.quote(title)}"
    )
    sandbox = ["bwrap", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev"]
    sandbox += ["--proc", "/proc"]
    # the checkout and the folder under /tmp that the test reads back, read-only
    for path in {ROOT, kept}:
        sandbox += ["--ro-bind", str(path), str(path)]
    launch = shlex.join([*sandbox, "sh", "-c", program])
    log = tmp_path / "program.log"
    env = DesktopEnv(
        DesktopConfig(settle_timeout_s=0.5, action_pause_s=0.0),
        options=DesktopOptions(launch=launch, program_log=str(log), launch_timeout_s=15.0),
    )
    try:
        # its first window (the title may come a frame later: pygame names it after it opens)
        assert env.size == (320, 240) and env.program is not None and env.program.running
        env.reset(seed=0)
        assert wait_until(lambda: env.observe().any()), "the program never drew its window"
        before = env.observe()
        env.step(Action("key", key="a"))  # the window's colour changes with each key
        assert wait_until(lambda: (env.observe() != before).any()), "the key changed nothing"
    finally:
        env.close()
    assert not (kept / "written").exists()
    assert "Read-only file system" in log.read_text()
