"""A bare python-xlib client for the input-safety tests: one window that counts the clicks
and keys X gives it (to COUNTS.json), in one of several guises.

Usage: python intruder_app.py MODE COUNTS.json GEOMETRY [ARG]; GEOMETRY is WxH+X+Y.

* ``grab``: a titled window ("kgintruder") that takes an active grab of the pointer and
  the keyboard (a screen locker, a password prompt);
* ``overlay``: an override-redirect window with no title, class or WM_STATE;
* ``spoof``: a titled window whose ``_NET_WM_PID`` claims PID ARG;
* ``impostor``: waits for window ARG (hex id) to be destroyed, then makes a window with
  that very id (X hands a dead client's id range to the next client), titled "kgimpostor";
* ``menu``: a titled main window ("kgmenuapp") and an override-redirect popup of its own
  (over its main window, 20 px in and 50 down) that grabs the pointer and the keyboard, as an open menu does;
* ``hider`` / ``closer``: a titled window ("kghider", "kgcloser") that unmaps itself
  (hides) or is destroyed (closes) at its first click.
"""

from __future__ import annotations

import json
import os
import sys
import time

from Xlib import X, Xatom, display, error

mode, out, geom = sys.argv[1], sys.argv[2], sys.argv[3]
arg = sys.argv[4] if len(sys.argv) > 4 else ""
w_, rest = geom.split("x")
h_, x_, y_ = rest.split("+")
counts = {"keys": 0, "clicks": 0, "grab": None, "wid": 0}


def save() -> None:
    with open(out + ".tmp", "w") as f:
        json.dump(counts, f)
    os.replace(out + ".tmp", out)


if mode == "impostor":
    wid = int(arg, 16)
    watch = display.Display()
    while True:
        try:
            watch.create_resource_object("window", wid).get_attributes()
            time.sleep(0.002)
        except error.BadWindow:
            break
d = display.Display()
s = d.screen()
if mode == "impostor":
    info = d.display.info
    if (wid & ~info.resource_id_mask) != info.resource_id_base:
        counts["wid"] = -1  # another client took the range first
        save()
        sys.exit(1)
    while d.display.allocate_resource_id() < wid - 1:
        pass
mask = X.ButtonPressMask | X.KeyPressMask
win = s.root.create_window(
    int(x_),
    int(y_),
    int(w_),
    int(h_),
    0,
    s.root_depth,
    X.InputOutput,
    X.CopyFromParent,
    background_pixel=s.white_pixel,
    event_mask=mask,
    override_redirect=(mode == "overlay"),
)
if mode != "overlay":
    names = {"impostor": "kgimpostor", "menu": "kgmenuapp", "hider": "kghider"}
    title = names.get(mode, "kgcloser" if mode == "closer" else "kgintruder")
    win.set_wm_name(title)
    win.set_wm_class(title, title)
if mode == "spoof":
    win.change_property(d.intern_atom("_NET_WM_PID"), Xatom.CARDINAL, 32, [int(arg)])
win.map()
grabber = win
if mode == "menu":
    grabber = s.root.create_window(
        int(x_) + 20,  # over its main window's top left, as a drop-down menu opens
        int(y_) + 50,
        120,
        80,
        0,
        s.root_depth,
        X.InputOutput,
        X.CopyFromParent,
        background_pixel=s.black_pixel,
        event_mask=mask,
        override_redirect=True,
    )
    grabber.map()
d.sync()
counts["wid"] = int(win.id)
if mode in ("grab", "menu"):
    time.sleep(0.3)  # mapped and viewable before the grab
    p = grabber.grab_pointer(
        False, X.ButtonPressMask, X.GrabModeAsync, X.GrabModeAsync, X.NONE, X.NONE, X.CurrentTime
    )
    k = grabber.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)
    counts["grab"] = [p, k]
save()
while True:
    e = d.next_event()
    if e.type == X.ButtonPress:
        counts["clicks"] += 1
        if mode == "hider":
            win.unmap()
        elif mode == "closer":
            win.destroy()
        d.flush()
    elif e.type == X.KeyPress:
        counts["keys"] += 1
    else:
        continue
    save()
