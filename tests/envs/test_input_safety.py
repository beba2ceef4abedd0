"""The agent's input reaches its target and no other program: another program's active
grab, a window id reused by another client after the target died, a PID claimed through
``_NET_WM_PID``, an overlay with no title; and what the run says of a region and of a
target hidden by an input (on Xvfb, with bare python-xlib clients, ``intruder_app.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from polling import wait_until

from kgagent.actions import Action
from kgagent.config import DesktopConfig
from kgagent.errors import ActionRefused, EnvironmentError_

pytestmark = pytest.mark.desktop
TK_APP = Path(__file__).with_name("desktop_app.py")
INTRUDER = Path(__file__).with_name("intruder_app.py")
A = Action("click", x=80, y=50)  # button A of desktop_app.py


def _counts(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _target(procs, tmp_path: Path, display: str) -> tuple[subprocess.Popen, Path, str]:
    from kgagent.envs.xwindows import XWindows

    counts, title = tmp_path / "target.json", f"kgtarget-{tmp_path.name}"
    proc = subprocess.Popen([sys.executable, str(TK_APP), str(counts), title])
    procs.append(proc)
    x = XWindows(display)
    try:
        assert wait_until(lambda: counts.exists() and x.find(title) is not None), "no target"
    finally:
        x.close()
    return proc, counts, title


def _intruder(procs, tmp_path: Path, mode: str, geom: str, arg: str = "") -> tuple:
    counts = tmp_path / f"{mode}.json"
    proc = subprocess.Popen([sys.executable, str(INTRUDER), mode, str(counts), geom, arg])
    procs.append(proc)
    return proc, counts


def _ready(counts: Path, grab: bool = False) -> bool:
    c = _counts(counts)
    return bool(c) and (not grab or c.get("grab") is not None)


def _env(title: str):
    from kgagent.envs.desktop import DesktopEnv

    return DesktopEnv(DesktopConfig(window=title, settle_timeout_s=0.5))


def test_another_programs_grab_gets_no_input_and_a_lasting_one_stops_the_run(
    procs, tmp_path, xvfb
) -> None:
    from kgagent.envs.grabs import STREAK

    _proc, counts, title = _target(procs, tmp_path, xvfb)
    env = _env(title)
    try:
        env.reset()
        grabber, grabbed = _intruder(procs, tmp_path, "grab", "200x100+800+500")
        assert wait_until(lambda: _ready(grabbed, grab=True)), "no grab"
        assert _counts(grabbed)["grab"] == [0, 0]  # GrabSuccess, both devices
        refused, end = 0, time.monotonic() + 30
        with pytest.raises(EnvironmentError_, match="inputs in a row over"):
            while time.monotonic() < end:
                try:
                    env.step(A if refused % 2 == 0 else Action("key", key="a"))
                except ActionRefused as e:
                    assert "another program holds the" in str(e)
                    refused += 1
                time.sleep(0.5)
        assert refused >= STREAK - 1
        assert _counts(grabbed)["clicks"] == 0 and _counts(grabbed)["keys"] == 0
        assert _counts(counts)["A"] == 0
        grabber.kill()
        grabber.wait()  # its grab ends with its connection
        env.step(A)
        assert wait_until(lambda: _counts(counts)["A"] == 1)
    finally:
        env.close()


def test_the_grab_check_moves_neither_the_focus_nor_the_pointer(xvfb) -> None:
    """The check grabs the device where it is (the focus window, the pointer's window): the
    pointer's window gets no LeaveNotify/EnterNotify, and the focus window only the
    FocusOut/FocusIn pair of a grab (modes NotifyGrab, NotifyUngrab), never a focus
    change of its own; the focus stays. A grab another client holds is seen on either
    device."""
    from Xlib import X
    from Xlib.display import Display
    from Xlib.ext import xtest

    from kgagent.envs.grabs import held_device

    owner, checker, other = Display(xvfb), Display(xvfb), Display(xvfb)
    try:
        s = owner.screen()
        mask = X.FocusChangeMask | X.EnterWindowMask | X.LeaveWindowMask
        w = s.root.create_window(300, 300, 200, 150, 0, s.root_depth, event_mask=mask)
        w.map()
        owner.sync()
        assert wait_until(lambda: w.get_attributes().map_state == X.IsViewable)
        w.set_input_focus(X.RevertToParent, X.CurrentTime)
        xtest.fake_input(owner, X.MotionNotify, x=400, y=380)
        owner.sync()
        wait_until(lambda: False, timeout=0.3)
        while owner.pending_events():
            owner.next_event()  # the focus and the pointer coming in
        root = checker.screen().root
        for _ in range(5):
            assert held_device(checker, root, keys=True) is None
            assert held_device(checker, root, keys=False) is None
        wait_until(lambda: False, timeout=0.3)
        owner.sync()
        seen = []
        while owner.pending_events():
            e = owner.next_event()
            seen.append((e.type, e.mode))
        assert seen  # the keyboard's test grabs
        assert all(t in (X.FocusIn, X.FocusOut) for t, _ in seen)  # no crossing event
        assert {m for _, m in seen} <= {X.NotifyGrab, X.NotifyUngrab}
        assert int(checker.get_input_focus().focus.id) == int(w.id)
        o = other.screen().root
        o.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)
        assert held_device(checker, root, keys=True) == "keyboard"
        assert held_device(checker, root, keys=False) is None
        o.grab_pointer(False, 0, X.GrabModeAsync, X.GrabModeAsync, X.NONE, X.NONE, 0)
        other.sync()
        assert held_device(checker, root, keys=False) == "pointer"
    finally:
        for d in (other, checker, owner):
            d.close()


def test_a_grab_of_the_targets_own_menu_lets_its_input_on_it_through(procs, tmp_path, xvfb) -> None:
    from kgagent.envs.grabs import STREAK

    _proc, menu = _intruder(procs, tmp_path, "menu", "300x200+500+100")
    assert wait_until(lambda: _ready(menu, grab=True)), "no menu"
    env = _env("kgmenuapp")
    try:
        env.reset()
        # outside the menu: refused (the grab may be another program's), and not counted
        for _ in range(STREAK + 1):
            with pytest.raises(ActionRefused, match="a menu of the target is open"):
                env.step(Action("click", x=250, y=40))
        assert _counts(menu)["clicks"] == 0
        mx, my = 20 + 30, 50 + 30  # on the menu (over the window's top left)
        env.step(Action("click", x=mx, y=my))
        assert wait_until(lambda: _counts(menu)["clicks"] == 1)
    finally:
        env.close()


def test_a_window_that_took_the_dead_targets_id_gets_no_input(procs, tmp_path, xvfb) -> None:
    target, counts, title = _target(procs, tmp_path, xvfb)
    env = _env(title)
    try:
        env.reset()
        wid = env._wid
        x, y, w, h = env.target_box
        _imp, imp = _intruder(procs, tmp_path, "impostor", f"{w}x{h}+{x}+{y}", hex(wid))
        wait_until(lambda: False, timeout=0.5)  # it watches the window
        target.kill()
        target.wait()
        assert wait_until(lambda: _counts(imp).get("wid", 0) != 0), "no impostor"
        if _counts(imp)["wid"] != wid:
            pytest.skip("another client took the dead target's id range first")
        with pytest.raises(EnvironmentError_, match="another program"):
            env.step(A)
        assert _counts(imp)["clicks"] == 0
    finally:
        env.close()


def test_a_pid_claimed_through_net_wm_pid_is_not_the_targets(procs, tmp_path, xvfb) -> None:
    from kgagent.envs.xwindows import XWindows

    target, counts, title = _target(procs, tmp_path, xvfb)
    cover, spoof = _intruder(procs, tmp_path, "spoof", "200x150+100+120", str(target.pid))
    assert wait_until(lambda: _ready(spoof))
    x = XWindows(xvfb)
    try:
        assert wait_until(lambda: x.find("kgintruder") is not None)
        assert x.find("kgintruder").pid == cover.pid  # the server's answer, not the claim
    finally:
        x.close()
    env = _env(title)
    try:
        env.reset()
        env.step(A)  # lands on the target (raised over the cover) or is refused
        assert _counts(spoof)["clicks"] == 0
    finally:
        env.close()


def test_an_overlay_with_no_title_or_class_is_another_programs(procs, tmp_path, xvfb) -> None:
    _target_proc, counts, title = _target(procs, tmp_path, xvfb)
    env = _env(title)
    try:
        env.reset()
        _ovr, overlay = _intruder(procs, tmp_path, "overlay", "200x150+100+120")
        assert wait_until(lambda: _ready(overlay))
        try:
            env.step(A)  # the target is raised over it, or the click refused
        except ActionRefused as e:
            assert "covers the target" in str(e)
        assert _counts(overlay)["clicks"] == 0
    finally:
        env.close()


def test_a_region_says_that_every_window_in_it_gets_input(xvfb) -> None:
    from kgagent.envs.desktop import DesktopEnv

    env = DesktopEnv(DesktopConfig(region=(0, 0, 400, 300)))
    try:
        line = env.describe_target()
    finally:
        env.close()
    assert line.startswith("region 400x300+0+0; every window in the region")
    assert "gets the agent's input" in line and "--window or --launch" in line


def test_a_target_hidden_by_an_input_is_an_error_and_one_closed_ends_the_episode(
    procs, tmp_path, xvfb
) -> None:
    _p, hider = _intruder(procs, tmp_path, "hider", "300x200+500+100")
    _q, closer = _intruder(procs, tmp_path, "closer", "300x200+500+400")
    assert wait_until(lambda: _ready(hider) and _ready(closer))
    env = _env("kghider")
    try:
        env.reset()
        with pytest.raises(EnvironmentError_, match="was closed or is hidden"):
            env.step(Action("click", x=40, y=40))
        # it counts the click after hiding: the env may see it hidden first
        assert wait_until(lambda: _counts(hider).get("clicks") == 1)
    finally:
        env.close()
    env = _env("kgcloser")
    try:
        env.reset()
        terminated = env.step(Action("click", x=40, y=40))[2]
        assert terminated and any("closed while" in n for n in env.notes())
    finally:
        env.close()


def test_with_the_check_off_input_goes_where_x_sends_it(procs, tmp_path, xvfb) -> None:
    """``desktop.refuse_grabbed_input=false``, for a target that grabs its own pointer (a
    game in relative mouse mode): nothing is refused, and X gives the input to the grab."""
    from kgagent.envs.desktop import DesktopEnv

    _proc, counts, title = _target(procs, tmp_path, xvfb)
    env = DesktopEnv(DesktopConfig(window=title, settle_timeout_s=0.5, refuse_grabbed_input=False))
    try:
        env.reset()
        _grabber, grabbed = _intruder(procs, tmp_path, "grab", "200x100+800+500")
        assert wait_until(lambda: _ready(grabbed, grab=True)), "no grab"
        env.step(A)
        assert wait_until(lambda: _counts(grabbed)["clicks"] == 1)
    finally:
        env.close()


def test_the_servers_pids_are_trusted_only_where_it_names_this_process_by_its_pid(
    xvfb, monkeypatch
) -> None:
    """Over ssh -X every client is the ssh process, and a container sees other PIDs
    than the server: there X-Resource's PIDs would name the wrong processes."""
    from kgagent.envs import xwindows
    from kgagent.envs.xwindows import XWindows

    x = XWindows(xvfb)
    try:
        assert x._xres and x.client_pid(x._own_xid()) == os.getpid()
    finally:
        x.close()
    real = os.getpid()
    monkeypatch.setattr(xwindows.os, "getpid", lambda: real + 1)  # another namespace
    x = XWindows(xvfb)
    try:
        assert not x._xres and x.client_pid(x._own_xid()) is None
    finally:
        x.close()
