"""Launched programs and SDL windows on a real Xvfb: binding, restarts, start-up deaths,
signals, and the keys a desktop agent must not send."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from command_lines import play_args
from polling import wait_until

from kgagent.actions import Action
from kgagent.config import DesktopConfig
from kgagent.errors import ActionRefused, ConfigError, EnvironmentError_

pytestmark = pytest.mark.desktop
HERE = Path(__file__).parent
SDL_APP = HERE / "pygame_app.py"
TK_APP = HERE / "desktop_app.py"
DRIVER = HERE / "launch_driver.py"
FAST = DesktopConfig(settle_timeout_s=0.5, action_pause_s=0.0)
needs_xvfb = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")


def _gone(pid: int) -> bool:
    """No such process, or only a zombie left for init to reap."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _sdl(title: str, *extra: str) -> str:
    return " ".join([sys.executable, str(SDL_APP), title, *extra])


def _opts(launch: str, log: Path, **kw):
    from kgagent.envs.desktop import DesktopOptions

    return DesktopOptions(launch=launch, program_log=str(log), launch_timeout_s=15.0, **kw)


@pytest.fixture
def sdl_window(xvfb: str, tmp_path: Path):
    """A pygame window on the bare Xvfb (no window manager), started by the test."""
    from kgagent.envs.xwindows import XWindows

    title = f"kg-sdl-{tmp_path.name}"
    out = tmp_path / "keys.txt"
    proc = subprocess.Popen([sys.executable, str(SDL_APP), title, "--out", str(out)])
    x = XWindows(xvfb)
    try:
        assert wait_until(lambda: x.find(title) is not None), "the SDL window did not appear"
        yield proc, title, out
    finally:
        x.close()
        proc.kill()
        proc.wait()


def test_sdl_window_is_bound_by_title_class_or_pid_without_a_window_manager(sdl_window) -> None:
    from kgagent.envs.desktop import DesktopEnv

    proc, title, out = sdl_window
    for query in (title, f"pid:{proc.pid}", f"title:{title.upper()}"):
        env = DesktopEnv(DesktopConfig(window=query, settle_timeout_s=0.5, action_pause_s=0.0))
        assert env.size == (320, 240), query
        env.close()
    env = DesktopEnv(DesktopConfig(window=title, settle_timeout_s=0.5, action_pause_s=0.0))
    before = env.observe()
    after = env.step(Action("key", key="x"))[0]
    assert wait_until(lambda: out.exists() and out.read_text().split() == ["x"], 3)
    assert not np.array_equal(before, after)  # the window's colour follows the key
    with pytest.raises(ActionRefused):
        env.step(Action("click", x=320, y=10))
    env.close()


def test_not_found_lists_the_sdl_window(sdl_window) -> None:
    from kgagent.envs.desktop import DesktopEnv

    _proc, title, _out = sdl_window
    with pytest.raises(EnvironmentError_) as e:
        DesktopEnv(DesktopConfig(window="no-such-window-zz9"))
    assert "no-such-window-zz9" in str(e.value) and title in str(e.value)


def test_launched_program_that_exits_ends_the_episode_and_is_started_again(
    xvfb: str, tmp_path: Path
) -> None:
    from kgagent.envs.desktop import DesktopEnv
    from kgagent.envs.launch import live_groups

    log = tmp_path / "program.log"
    title = f"kg-exit-{tmp_path.name}"
    env = DesktopEnv(FAST, options=_opts(_sdl(title, "--exit-after", "2"), log))
    try:
        assert env.restarts is True and env.size == (320, 240)
        first = env.program.pid
        env.reset(seed=0)
        assert env.program.pid == first  # just launched: reset does not start it again
        assert env.step(Action("key", key="a"))[2] is False
        *_, terminated, _trunc, info = env.step(Action("key", key="b"))
        if not terminated:  # the window may outlive the key by a frame
            *_, terminated, _trunc, info = env.step(Action("key", key="c"))
        assert terminated and info["exit_code"] == 7
        end = env.end_info()
        assert end["exit_code"] == 7 and end["program_log"] == str(log)
        assert "2 inputs, exiting" in log.read_text()
        obs, _ = env.reset(seed=1)
        assert env.program.pid != first and env.program.running and _gone(first)
        assert obs.shape == (240, 320, 3)
        assert env.step(Action("key", key="a"))[2] is False
        assert env.end_info()["program_starts"] == 2
        # the run's end says how the program ended
        assert [n for n in env.notes() if "program ended" in n] == [
            f"desktop: the program ended once during the run: exited with code 7 ×1; "
            f"its output is in {log}"
        ]
    finally:
        env.close()
    assert _gone(env.program.pid) and not live_groups()


def test_a_window_unmapped_for_a_moment_after_its_first_frame_is_awaited_at_every_start(
    xvfb: str, tmp_path: Path
) -> None:
    """Some programs unmap their new window for a moment after its first frame. At the
    first start and at a restart (reset) alike, the env waits for it to be mapped again
    instead of ending with "was closed or is hidden"."""
    import threading

    from Xlib import display as xdisplay

    from kgagent.envs.desktop import DesktopEnv

    conn = xdisplay.Display(xvfb)
    hidden: list[int] = []
    timers: list[threading.Timer] = []

    class UnmappedAfterFirstFrame(DesktopEnv):
        def _settle(self, before):
            out = super()._settle(before)
            if before is None:  # a start's first frame has settled: unmap it for 0.4 s
                w = conn.create_resource_object("window", self._wid)
                w.unmap()
                conn.sync()
                hidden.append(self._wid)
                timers.append(threading.Timer(0.4, lambda: (w.map(), conn.sync())))
                timers[-1].start()
            return out

    log = tmp_path / "program.log"
    launch = _sdl(f"kg-unmap-{tmp_path.name}", "--exit-after", "1")
    env = None
    try:
        env = UnmappedAfterFirstFrame(FAST, options=_opts(launch, log))
        assert env.size == (320, 240) and len(hidden) == 1
        assert f"'kg-unmap-{tmp_path.name}'" in env.describe_target()  # not "pygame window"
        assert env.step(Action("key", key="a"))[2] or env.step(Action("key", key="b"))[2]
        obs, _ = env.reset(seed=1)  # the restart: its window is unmapped for a moment too
        assert len(hidden) == 2 and obs.shape == (240, 320, 3)
        assert env.program.running and env.end_info()["program_starts"] == 2
    finally:
        for t in timers:
            t.join()
        if env is not None:
            env.close()
        conn.close()


def test_a_program_its_first_input_closes_is_no_start_up_death(xvfb: str, tmp_path: Path) -> None:
    """A game whose quit key the agent pressed first thing, episode after episode: each
    episode ends and the program starts again; only a death before any input counts
    towards ``start_failures``."""
    from kgagent.envs.desktop import DesktopEnv

    log = tmp_path / "program.log"
    title = f"kg-quit-{tmp_path.name}"
    env = DesktopEnv(FAST, options=_opts(_sdl(title, "--exit-after", "1"), log, start_failures=2))
    try:
        for episode in range(3):
            env.reset(seed=episode)
            *_, terminated, _trunc, info = env.step(Action("key", key="a"))
            if not terminated:  # the window may outlive the key by a frame
                *_, terminated, _trunc, info = env.step(Action("key", key="b"))
            assert terminated and info["exit_code"] == 7
        assert env.end_info()["program_starts"] == 3
    finally:
        env.close()


def test_a_window_closed_during_the_wait_ends_the_episode_with_that_input(
    xvfb: str, tmp_path: Path
) -> None:
    """The input closes the window at once and the process exits half a second later:
    the step reports the end, not what lay behind the window as the input's effect."""
    from kgagent.envs.desktop import DesktopEnv

    log = tmp_path / "program.log"
    title = f"kg-linger-{tmp_path.name}"
    launch = _sdl(title, "--exit-after", "1", "--linger", "0.5")
    env = DesktopEnv(FAST, options=_opts(launch, log))
    try:
        env.reset(seed=0)
        *_, terminated, _trunc, info = env.step(Action("key", key="a"))
        assert terminated and info["exit_code"] == 7
    finally:
        env.close()


def test_program_dying_at_start_up_is_one_clear_error(xvfb: str, tmp_path: Path) -> None:
    from kgagent.envs.desktop import DesktopEnv
    from kgagent.envs.launch import live_groups

    log = tmp_path / "program.log"
    with pytest.raises(EnvironmentError_) as e:
        DesktopEnv(FAST, options=_opts(_sdl("x", "--die", "3"), log, start_failures=2))
    msg = str(e.value)
    assert "\n" not in msg
    assert "exited with code 3 at start-up 2 times in a row" in msg
    assert str(log) in msg
    assert msg.endswith(
        "(its last words: pygame_app: fatal: cannot open the game data | pygame_app: giving up)"
    )
    assert log.read_text().count("--- kgagent: start") == 2
    assert not live_groups()


def test_a_program_killed_by_a_signal_at_start_up_is_named_so(xvfb: str, tmp_path: Path) -> None:
    from kgagent.envs.desktop import DesktopEnv

    with pytest.raises(EnvironmentError_, match="was killed by SIGSEGV at start-up"):
        DesktopEnv(
            FAST, options=_opts("sh -c 'kill -SEGV $$'", tmp_path / "p.log", start_failures=1)
        )


def test_no_display_starts_a_private_xvfb_and_close_stops_everything(
    xvfb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgagent.envs.desktop import DesktopEnv

    monkeypatch.delenv("DISPLAY")
    env = DesktopEnv(FAST, options=_opts(_sdl("kg-private"), tmp_path / "p.log"))
    try:
        assert env.display != xvfb and "DISPLAY" not in os.environ
        pids = (env.program.pid, env._xserver.proc.pid)
        assert not any(_gone(p) for p in pids)
        assert env.step(Action("key", key="x"))[2] is False
    finally:
        env.close()
    assert all(_gone(p) for p in pids)
    assert "DISPLAY" not in os.environ


@needs_xvfb
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_stopping_kgagent_leaves_no_process_behind(tmp_path: Path, sig: int) -> None:
    """Ctrl-C and SIGTERM run close(); even SIGKILL takes the program and the Xvfb along."""
    log = tmp_path / "program.log"
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    driver = subprocess.Popen(
        [sys.executable, str(DRIVER), _sdl("kg-signal"), str(log)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=HERE.parent.parent,
    )
    try:
        line = driver.stdout.readline()
        assert line, "the driver did not start the program"
        pids = json.loads(line)
        assert not _gone(pids["program"]) and not _gone(pids["xvfb"])
        time.sleep(0.3)  # in the middle of its key presses
        driver.send_signal(sig)
        try:
            # close() takes at most stop_timeout_s (5 s) for the program and 2 s for Xvfb.
            driver.wait(30)
        except subprocess.TimeoutExpired:
            driver.send_signal(signal.SIGUSR1)  # its stacks go to the captured stderr
            time.sleep(1)
            raise
        assert wait_until(lambda: _gone(pids["program"]) and _gone(pids["xvfb"]), 10), pids
    finally:
        driver.kill()
        driver.wait()


def test_keys_that_close_or_log_out_are_refused(xvfb: str, tmp_path: Path) -> None:
    from kgagent.envs.desktop import DesktopEnv, DesktopOptions

    counts = tmp_path / "counts.json"
    title = f"kgkeys-{tmp_path.name}"
    proc = subprocess.Popen([sys.executable, str(TK_APP), str(counts), title])
    try:
        from kgagent.envs.xwindows import XWindows

        x = XWindows(xvfb)
        assert wait_until(lambda: counts.exists() and x.find(title) is not None)
        x.close()
        cfg = DesktopConfig(window=title, settle_timeout_s=0.5, action_pause_s=0.0)
        env = DesktopEnv(cfg)
        for a in (
            Action("hotkey", key="alt+f4"),
            Action("hotkey", key="ctrl+q"),
            Action("hotkey", key="ctrlright+w"),
            Action("hotkey", key="ctrl+alt+backspace"),
            Action("hotkey", key="ctrl+shift+q"),
            Action("key", key="winleft"),
            Action("key", key="ctrl+w"),
            Action("hotkey", key="ctrl+c"),
        ):
            with pytest.raises(ActionRefused, match="allow_closing_keys"):
                env.step(a)
        env.step(Action("key", key="x"))
        assert wait_until(lambda: json.loads(counts.read_text())["keys"] == {"x": 1}, 3)
        assert proc.poll() is None
        env.close()
        # allowed by config: the combination is sent (the test app ignores ctrl+q)
        allowed = DesktopEnv(cfg, options=DesktopOptions(allow_closing_keys=True))
        allowed.step(Action("hotkey", key="ctrl+q"))
        assert wait_until(lambda: json.loads(counts.read_text())["keys"].get("q") == 1, 3)
        allowed.close()
    finally:
        proc.kill()
        proc.wait()


def test_a_point_on_a_fail_safe_corner_is_refused(xvfb: str) -> None:
    from kgagent.envs.desktop import DesktopEnv

    env = DesktopEnv(DesktopConfig(region=(0, 0, 200, 100), settle_timeout_s=0.2))
    with pytest.raises(ActionRefused, match="fail-safe"):
        env.step(Action("click", x=0, y=0))
    env.step(Action("click", x=5, y=5))  # anywhere else is fine
    env.close()


def test_the_runner_restarts_a_launched_program_and_logs_its_exits(
    xvfb: str, tmp_path: Path
) -> None:
    """The harness contract: an exit ends the episode (the step log says so, with the exit
    code), the next episode starts the program again, and the run stops it at the end."""
    from kgagent.agent.runner import Runner
    from kgagent.config import Config
    from kgagent.envs.desktop import DesktopEnv

    cfg = Config.load(
        None,
        [
            "run.env=desktop",
            "run.ablation=random",
            "desktop.noise_probe_s=0",
            "desktop.settle_timeout_s=0.5",
            "desktop.action_pause_s=0",
            "perception.encoder=pixel",
            "perception.segmenter=opencv",
            "brain.kind=offline",
        ],
    )
    log = tmp_path / "program.log"
    env = DesktopEnv(cfg.desktop, options=_opts(_sdl("kg-runner", "--exit-after", "2"), log))
    runner = Runner(cfg, memory_path=tmp_path / "mem", env=env, progress=False, log=lambda m: None)
    summary = runner.run(7)
    lines = [json.loads(s) for s in Path(summary.log_path).read_text().splitlines()]
    ends = [r for r in lines if r["type"] == "episode"]
    assert summary.episodes >= 2 and len(ends) >= 1
    assert all(e.get("exit_code") == 7 and e.get("program_log") == str(log) for e in ends)
    assert log.read_text().count("--- kgagent: start") == summary.episodes
    assert not env.program.running


def test_a_window_blank_for_a_moment_before_its_first_frame_is_not_noise(
    xvfb: str, tmp_path: Path
) -> None:
    """A program still loading shows a black window, which holds still, then draws its
    first frame during the noise probe: that one change lifts no floor."""
    from kgagent.agent.runner import Runner
    from kgagent.config import Config
    from kgagent.envs.desktop import DesktopEnv

    cfg = Config.load(
        None,
        [
            "run.env=desktop",
            "desktop.noise_probe_s=1.0",
            "perception.encoder=pixel",
            "perception.segmenter=opencv",
            "brain.kind=offline",
        ],
    )
    launch = _sdl("kg-blank", "--blank-for", "1.5")
    env = DesktopEnv(cfg.desktop, options=_opts(launch, tmp_path / "program.log"))
    logs: list[str] = []
    runner = Runner(cfg, memory_path=tmp_path / "mem", env=env, progress=False, log=logs.append)
    summary = runner.run(0)
    assert runner.idle_change == 0.0, logs
    header = json.loads(Path(summary.log_path).read_text().splitlines()[0])
    assert header["config"]["augment"]["min_change"] == Config().augment.min_change
    assert not any(m.startswith("noise:") for m in logs)


def test_a_window_query_with_nothing_after_its_kind_is_one_clear_error() -> None:
    from kgagent.envs.xwindows import parse_query

    for query, example in (("title:", "title:Calculator"), ("class: ", "class:XTerm")):
        with pytest.raises(EnvironmentError_, match=f"needs a value after it, e.g. {example}$"):
            parse_query(query)
    with pytest.raises(EnvironmentError_, match="pid: needs a value"):
        parse_query("pid:")
    assert parse_query("title: Calc ") == ("title", "Calc")
    assert parse_query("notes:todo") == ("any", "notes:todo")  # not a kind: a plain text


def test_a_new_display_without_a_program_to_launch_is_refused_before_it_starts() -> None:
    from kgagent.envs.desktop import DesktopEnv, DesktopOptions

    with pytest.raises(ConfigError, match="display=new starts an empty private X server"):
        DesktopEnv(FAST, options=DesktopOptions(display="new"))


def test_a_command_that_does_not_exist_is_one_clear_error(xvfb: str, tmp_path: Path) -> None:
    from kgagent.envs.desktop import DesktopEnv
    from kgagent.envs.launch import live_groups

    with pytest.raises(EnvironmentError_, match="no-such-program-zz9 not found$"):
        DesktopEnv(FAST, options=_opts("no-such-program-zz9 --flag", tmp_path / "p.log"))
    assert not live_groups()


def test_a_started_program_does_not_get_what_opencv_set_for_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """opencv-python's import points Qt at its own plugins and puts its libraries on
    LD_LIBRARY_PATH in this process; a Qt program started with them aborts. The user's
    own values stay."""
    import cv2

    from kgagent.envs.launch import Program

    ours = os.path.dirname(os.path.abspath(cv2.__file__))
    monkeypatch.setenv("QT_QPA_PLATFORM_PLUGIN_PATH", f"{ours}/qt/plugins")
    monkeypatch.setenv("QT_QPA_FONTDIR", "/usr/share/fonts/mine")
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{ours}/../../lib64:/opt/mine/lib")
    out = tmp_path / "env.txt"
    p = Program(["sh", "-c", f"env > {out}"], ":0", tmp_path / "p.log")
    p.start()
    assert p.wait_exit(10) == 0
    got = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert "QT_QPA_PLATFORM_PLUGIN_PATH" not in got
    assert got["QT_QPA_FONTDIR"] == "/usr/share/fonts/mine"
    assert got["LD_LIBRARY_PATH"] == "/opt/mine/lib" and got["DISPLAY"] == ":0"
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{ours}/../../lib64:")  # it was unset
    p.start()
    assert p.wait_exit(10) == 0
    assert "LD_LIBRARY_PATH=" not in out.read_text()


def test_a_started_program_draws_on_the_x_display_even_in_a_wayland_session(
    xvfb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Wayland session's environment would send a toolkit to the Wayland desktop (or,
    set off-screen, nowhere); a started program is told to use the X display it gets."""
    from kgagent.envs.desktop import DesktopEnv
    from kgagent.envs.launch import X11_TOOLKITS, Program

    monkeypatch.setenv("WAYLAND_DISPLAY", f"wayland-kg-{tmp_path.name}")  # no such socket
    monkeypatch.setenv("XDG_SESSION_TYPE", "wayland")
    monkeypatch.setenv("SDL_VIDEODRIVER", "wayland")
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    out = tmp_path / "env.txt"
    p = Program(["sh", "-c", f"env > {out}"], ":7", tmp_path / "p.log")
    p.start()
    assert p.wait_exit(10) == 0
    got = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert "WAYLAND_DISPLAY" not in got and got["DISPLAY"] == ":7"
    assert {k: got.get(k) for k in X11_TOOLKITS} == X11_TOOLKITS
    # an SDL game told "wayland" by the session opens its window where the agent looks
    title = f"kg-wl-{tmp_path.name}"
    env = DesktopEnv(FAST, options=_opts(_sdl(title), tmp_path / "game.log"))
    try:
        assert env.size == (320, 240) and env.program.running
    finally:
        env.close()


def test_a_window_not_found_in_a_wayland_session_says_how_to_get_an_x_window(
    sdl_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgagent.envs.desktop import DesktopEnv

    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    with pytest.raises(EnvironmentError_, match="Wayland session.*GDK_BACKEND=x11") as e:
        DesktopEnv(DesktopConfig(window="no-such-window-zz9"))
    assert sdl_window[1] in str(e.value)  # still lists what there is


def test_a_program_off_the_path_is_pointed_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Debian installs games in /usr/games, which a root shell's PATH lacks: the error
    names the program found there."""
    from kgagent.envs import launch

    games = tmp_path / "games"
    games.mkdir()
    prog = games / "kg-off-path-zz9"
    prog.write_text("#!/bin/sh\n")
    prog.chmod(0o755)
    monkeypatch.setattr(launch, "OFF_PATH_DIRS", (str(tmp_path / "none"), str(games)))
    p = launch.Program("kg-off-path-zz9 --level 2", ":0", tmp_path / "p.log")
    with pytest.raises(EnvironmentError_) as e:
        p.start()
    assert str(e.value) == (
        f"cannot start 'kg-off-path-zz9 --level 2': kg-off-path-zz9 not found on PATH "
        f"(there is {prog}: give that path, or add {games} to PATH)"
    )


@pytest.fixture
def managed_x() -> Iterator[str]:
    """A private 800x600 Xvfb with a reparenting window manager (evilwm) on it."""
    from kgagent.envs.launch import PrivateX

    if shutil.which("Xvfb") is None or shutil.which("evilwm") is None:
        pytest.skip("Xvfb and evilwm are needed (apt-get install xvfb evilwm)")
    x = PrivateX((800, 600))
    wm = subprocess.Popen(
        ["evilwm", "-fn", "fixed"],
        env=dict(os.environ, DISPLAY=x.display),
        stderr=subprocess.DEVNULL,
    )
    try:
        yield x.display
    finally:
        wm.kill()
        wm.wait()
        x.stop()


def test_a_launched_window_under_a_window_manager_is_its_client_not_the_frame(
    managed_x: str, tmp_path: Path
) -> None:
    """A reparenting window manager puts a frame around the program's window: the target
    is the program's own window inside it, found through the frame."""
    from kgagent.envs.desktop import DesktopEnv
    from kgagent.envs.xwindows import XWindows

    out = tmp_path / "keys.txt"
    env = DesktopEnv(
        FAST,
        display=managed_x,
        options=_opts(_sdl("kg-framed", "--out", str(out)), tmp_path / "p.log"),
    )
    try:
        xw = XWindows(managed_x)
        tops = {c.id: c.get_geometry() for c in xw.root.query_tree().children}
        xw.close()
        assert env._wid not in tops  # reparented: the root's child is the frame
        assert env.size == (320, 240)
        bx, by, bw, bh = env.target_box
        assert any(
            f.x <= bx
            and f.y <= by
            and f.x + f.width + 2 * f.border_width >= bx + bw
            and (f.x, f.y) != (bx, by)
            for f in tops.values()
        ), "the target is not the window inside a frame"
        env.step(Action("key", key="k"))
        assert wait_until(lambda: out.exists() and out.read_text().split() == ["k"], 3)
    finally:
        env.close()


def test_under_a_window_manager_a_target_moved_off_the_screen_is_put_back(
    managed_x: str, tmp_path: Path
) -> None:
    """Under a window manager the move back is a request to it, which places the frame
    by its gravity: the target still ends where it was. (The program moves itself here:
    a title-bar drag under a manager is the manager's move.)"""
    from kgagent.envs.desktop import DesktopEnv

    counts = tmp_path / "counts.json"
    launch = f"{sys.executable} {TK_APP} {counts} kg-dragged-{tmp_path.name}"
    env = DesktopEnv(FAST, display=managed_x, options=_opts(launch, tmp_path / "p.log"))
    try:
        box = env.target_box
        env.step(Action("key", key="f4"))
        assert env.target_box == box
        assert any("put back" in n for n in env.notes())
    finally:
        env.close()


def _shrink_screen(display: str, w: int, h: int) -> None:
    """What a program switching the display's mode does: RandR resizes the screen
    (the outputs off first, as ``xrandr --fb`` does)."""
    from Xlib import display as xdisplay
    from Xlib.ext import randr

    d = xdisplay.Display(display)
    try:
        root = d.screen().root
        res = root.xrandr_get_screen_resources()
        for crtc in res.crtcs:
            d.xrandr_set_crtc_config(crtc, res.config_timestamp, 0, 0, 0, randr.Rotate_0, [])
        root.xrandr_set_screen_size(w, h, 100, 100)
        d.sync()
    finally:
        d.close()


@needs_xvfb
def test_after_a_mode_change_the_screen_is_its_new_size(tmp_path: Path) -> None:
    """The screen's size is read as it is now: the target becomes its part on the smaller
    screen (a point past the edge lies outside it), and the fail-safe corners are the
    smaller screen's corners."""
    from kgagent.envs.desktop import DesktopEnv
    from kgagent.envs.launch import PrivateX

    x = PrivateX((1000, 700))
    counts = tmp_path / "counts.json"
    launch = f"{sys.executable} {TK_APP} {counts} kg-randr-{tmp_path.name}"
    try:
        env = DesktopEnv(FAST, display=x.display, options=_opts(launch, tmp_path / "p.log"))
        try:
            assert env.target_box == (100, 120, 400, 300)
            _shrink_screen(x.display, 450, 400)
            with pytest.raises(ActionRefused, match="outside the 350x280 target"):
                env.step(Action("click", x=380, y=50))  # screen x 480, past the edge
            env.step(Action("click", x=80, y=50))  # button A, on the screen
            assert wait_until(lambda: json.loads(counts.read_text())["A"] == 1, 3)
            assert env._input.corners[3] == (449, 399)
            obs = env.observe()
            assert (
                env.size == (350, 280) and obs.shape == (280, 350, 3) and obs[:, 340:].mean() > 100
            )
        finally:
            env.close()
    finally:
        x.stop()


class _Unmapped:
    """An X connection on which the bound window is not viewable for ``hidden`` looks
    (a window manager reparenting it), and the program's windows are ``own``."""

    def __init__(self, hidden: int, own: list) -> None:
        self.hidden, self.own, self.looks = hidden, own, 0

    def box(self, wid: int):  # noqa: ANN201
        self.looks += 1
        return None if self.looks <= self.hidden else (10, 20, 300, 200)

    def windows(self) -> list:
        return self.own

    def client_pid(self, wid: int) -> None:  # the server cannot tell (no X-Resource)
        return None

    def exists(self, wid: int) -> bool:
        return False


class _Running:
    running = True

    def owns(self, pid: int) -> bool:
        return pid == 7


def _starting(x: _Unmapped, timeout_s: float):  # noqa: ANN202
    from kgagent.envs.desktop import DesktopEnv, DesktopOptions

    env = object.__new__(DesktopEnv)
    env.config, env.opts = FAST, DesktopOptions(launch_timeout_s=timeout_s)
    env._x, env._program, env._region = x, _Running(), None
    env._wid, env._title, env._owner = 0x600002, "pygame window", None
    return env


def test_a_new_window_not_yet_viewable_is_waited_for_then_a_clear_error() -> None:
    """Just after a launched window appears, a window manager may still be reparenting it:
    start-up waits for it to become viewable, follows a window that replaced it, and
    gives the one-line error only when it never shows."""
    from kgagent.envs.xwindows import Window

    env = _starting(_Unmapped(hidden=3, own=[]), 2.0)
    assert env._await_viewable() == (10, 20, 300, 200)
    newer = Window(wid=0x600009, title="game", wm_class=("", ""), pid=7, box=(0, 0, 300, 200))
    env = _starting(_Unmapped(hidden=2, own=[newer]), 2.0)
    env._await_viewable()
    assert env._wid == 0x600009
    env = _starting(_Unmapped(hidden=10**6, own=[]), 0.2)
    with pytest.raises(EnvironmentError_, match="was closed or is hidden"):
        env._await_viewable()


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            out.append(int(d.name))
    return out


def _pids_running(arg: str) -> list[int]:
    """The live processes with ``arg`` as one of their arguments."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if arg.encode() in (d / "cmdline").read_bytes().split(b"\0") and not _gone(int(d.name)):
                out.append(int(d.name))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


def test_sigkill_of_kgagent_on_a_real_display_stops_what_the_program_started(
    xvfb: str, tmp_path: Path
) -> None:
    """`kgagent play --launch "sh -c 'GAME & wait'"` on the user's display, killed with
    SIGKILL: PR_SET_PDEATHSIG reaches the sh alone; the watcher stops the game it started."""
    title = f"kg-orphan-{tmp_path.name}"
    launch = f"sh -c '{_sdl(title)} & wait'"
    mem = tmp_path / "memory"
    play = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kgagent.cli.main import main; main()",
            *play_args(mem, "--launch", launch, steps=100000),
            "--set",
            "desktop.noise_probe_s=0",
            "--set",
            "desktop.settle_timeout_s=0.2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "DISPLAY": xvfb},
        start_new_session=True,  # a stray signal to the test's group misses it
    )
    try:
        assert wait_until(lambda: _pids_running(title) or play.poll() is not None, 60), "no game"
        assert play.poll() is None, play.stderr.read().decode()
        (game,) = _pids_running(title)
        pgid = os.getpgid(game)
        assert pgid != os.getpgid(play.pid) and len(_group(pgid)) >= 2  # sh and the game
        time.sleep(1.0)  # playing
        play.kill()
        play.wait()
        assert wait_until(lambda: not _group(pgid), 10), [
            Path(f"/proc/{p}/cmdline").read_bytes() for p in _group(pgid)
        ]
    finally:
        play.kill()
        play.wait()
        for p in _pids_running(title):
            os.kill(p, signal.SIGKILL)


def test_a_stopped_program_leaves_no_watcher_behind(tmp_path: Path) -> None:
    from kgagent.envs import launch

    p = launch.Program(["sh", "-c", "sleep 300 & wait"], ":0", tmp_path / "p.log", 1.0)
    p.start()
    watcher = launch._WATCHERS[p.pid][1]
    assert watcher.poll() is None and os.getpgid(watcher.pid) != p.pid  # outside the group
    p.stop()
    assert watcher.poll() is not None and p.pid not in launch._WATCHERS
    assert not _group(p.pid)
    # a program that ends by itself: its watcher goes as soon as the group is empty
    p2 = launch.Program(["sh", "-c", "exit 0"], ":0", tmp_path / "p.log", 1.0)
    p2.start()
    w2 = launch._WATCHERS[p2.pid][1]
    assert p2.wait_exit(10) == 0
    assert wait_until(lambda: w2.poll() is not None, 5)
    p2.stop()


def test_a_watcher_stops_the_group_when_its_pipe_closes(tmp_path: Path) -> None:
    """What a SIGKILL of kgagent does, in one process: the pipe's write end closes."""
    from kgagent.envs import launch

    p = launch.Program(["sh", "-c", "sleep 300 & wait"], ":0", tmp_path / "p.log", 1.0)
    p.start()
    try:
        assert wait_until(lambda: len(_group(p.pid)) == 2, 5)
        fd, watcher = launch._WATCHERS.pop(p.pid)
        os.close(fd)
        assert wait_until(lambda: not _group(p.pid), 5)
        assert p.wait_exit(5) is not None  # reaped, as init does once kgagent is gone
        assert watcher.wait(5) == 0
    finally:
        p.stop()


def test_a_command_that_cannot_be_split_names_the_option(tmp_path: Path) -> None:
    from kgagent.envs.launch import Program
    from kgagent.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        Program("xcalc 'unterminated", ":0", tmp_path / "p.log")
    assert str(e.value) == (
        "desktop.launch: cannot split the command (No closing quotation): xcalc 'unterminated"
    )


def test_a_launcher_that_exits_with_code_0_is_said_to_hand_the_program_on(
    tmp_path: Path,
) -> None:
    """A script that runs `xcalc &` and exits, a single-instance app already running:
    exit code 0 at every start-up is no crash; the error says what it likely is."""
    from kgagent.envs.launch import Program

    log = tmp_path / "p.log"
    p = Program(["sh", "-c", "echo handing over"], ":0", log)
    p.start()
    assert p.wait_exit(10) == 0
    assert p.start_up_failure(3) == (
        "\"sh -c 'echo handing over'\" exited with code 0 at start-up 3 times in a row "
        "(it may start the program in the background and exit, or hand over to an instance "
        "already running: start the program yourself and use --window); its output is in "
        f"{log} (its last words: handing over)"
    )
    p = Program(["sh", "-c", "exit 3"], ":0", log)
    p.start()
    assert p.wait_exit(10) == 3
    msg = p.start_up_failure(2)
    assert "exited with code 3 at start-up 2 times in a row;" in msg
    assert "--window" not in msg


@needs_xvfb
def test_no_window_on_a_private_xvfb_says_it_is_the_private_one(tmp_path: Path) -> None:
    """Its number alone (:0) reads as the user's display, which the run never touched."""
    from kgagent.envs.launch import PrivateX, Program

    x = PrivateX((320, 240))
    try:
        p = Program("sleep 100", x.display, tmp_path / "p.log", where=x.where)
        assert p.no_window(20) == (
            f"no window of 'sleep 100' appeared on a private Xvfb ({x.display}) within 20 s "
            f"(desktop.launch_timeout_s); its output is in {tmp_path / 'p.log'}"
        )
    finally:
        x.stop()
    assert "appeared on :5 within" in Program("sleep 1", ":5", tmp_path / "p.log").no_window(20)


def test_a_launcher_that_exits_0_at_every_start_up_says_it_may_hand_the_program_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgagent.envs.desktop import DesktopEnv

    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(EnvironmentError_) as e:
        DesktopEnv(FAST, options=_opts("sh -c 'exit 0'", tmp_path / "p.log", start_failures=2))
    assert "exited with code 0 at start-up 2 times in a row (it may start the program" in str(
        e.value
    )


def test_no_window_on_a_private_xvfb_names_it_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgagent.envs.desktop import DesktopEnv

    monkeypatch.delenv("DISPLAY", raising=False)
    opts = _opts("sleep 100", tmp_path / "p.log")
    opts.launch_timeout_s = 1.0
    with pytest.raises(EnvironmentError_, match=r"appeared on a private Xvfb \(:\d+\) within 1 s"):
        DesktopEnv(FAST, options=opts)


def test_window_and_region_exclude_each_other() -> None:
    from kgagent.envs.desktop import DesktopEnv

    with pytest.raises(ConfigError, match="desktop.window and desktop.region exclude"):
        DesktopEnv(DesktopConfig(window="xcalc", region=(0, 0, 10, 10)))


def _copies(title: str) -> list[int]:
    """PIDs of running test apps that show ``title``."""
    pids = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and title.encode() in (d / "cmdline").read_bytes():
                pids.append(int(d.name))
        except OSError:
            continue
    return pids


def test_a_launcher_that_detaches_is_refused_at_once_naming_its_window(
    xvfb: str, tmp_path: Path
) -> None:
    """`setsid PROGRAM` exits 0 at once and the program runs in a session of its own, out of
    kgagent's reach: it was started three times and all three copies were left running.
    Now the first start's window is named (with its pid, to bind or stop) and none follows."""
    from kgagent.envs.desktop import DesktopEnv

    if shutil.which("setsid") is None:
        pytest.skip("setsid is not installed")
    title = f"kg-detached-{tmp_path.name}"
    try:
        with pytest.raises(EnvironmentError_) as e:
            DesktopEnv(FAST, options=_opts("setsid " + _sdl(title), tmp_path / "p.log"))
        msg = str(e.value)
        assert "\n" not in msg and "exited with code 0 at start-up and windows of another" in msg
        (pid,) = _copies(title)
        assert f"pid {pid})" in msg and "--window pid:N" in msg  # its title may not be set yet
    finally:
        for pid in _copies(title):
            os.kill(pid, signal.SIGKILL)


def test_a_launched_program_whose_windows_match_no_query_names_them(
    xvfb: str, tmp_path: Path
) -> None:
    """`--launch CMD --window Q`: the program's windows came up, none matching Q; the error
    said "no window appeared"."""
    from kgagent.envs.desktop import DesktopEnv, DesktopOptions

    if shutil.which("xcalc") is None:
        pytest.skip("xcalc is not installed (apt-get install x11-apps)")
    opts = DesktopOptions(launch="xcalc", program_log=str(tmp_path / "p.log"), launch_timeout_s=5.0)
    with pytest.raises(EnvironmentError_) as e:
        DesktopEnv(DesktopConfig(window="class:NoSuchClass", settle_timeout_s=0.5), options=opts)
    msg = str(e.value)
    assert "no window of 'xcalc' matching 'class:NoSuchClass' (desktop.window) appeared" in msg
    assert "its windows: 'Calculator' (XCalc pid " in msg and "other processes" not in msg


@needs_xvfb
def test_a_private_display_stays_up_between_clients() -> None:
    """kgagent connects to its private Xvfb, leaves, and connects again (a probe, then the
    run): a server that resets when its last client leaves refuses connections for a
    moment, so some of these would fail."""
    from Xlib import display as xdisplay

    from kgagent.envs.launch import PrivateX

    x = PrivateX((320, 240))
    try:
        for _ in range(30):
            xdisplay.Display(x.display).close()
    finally:
        x.stop()
