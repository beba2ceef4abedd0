"""A stand-in for `kgagent play --launch` in the signal tests.

Usage: python launch_driver.py CMD LOG

It launches CMD on a private Xvfb (no DISPLAY), prints one JSON line with the PIDs of
the program and of the Xvfb, then presses keys until it is stopped, closing the
environment in ``finally`` as the runner does.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys

os.environ.pop("DISPLAY", None)
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks where it hangs
# Ctrl-C as in a terminal: a test suite started in the background by a shell inherits
# SIGINT ignored, and Python then installs no KeyboardInterrupt handler.
signal.signal(signal.SIGINT, signal.default_int_handler)

from kgagent.actions import Action  # noqa: E402
from kgagent.config import DesktopConfig  # noqa: E402
from kgagent.envs.desktop import DesktopEnv, DesktopOptions  # noqa: E402

env = DesktopEnv(
    DesktopConfig(settle_timeout_s=0.2, action_pause_s=0.0),
    options=DesktopOptions(launch=sys.argv[1], program_log=sys.argv[2]),
)
try:
    assert env._xserver is not None and env.program is not None
    print(json.dumps({"program": env.program.pid, "xvfb": env._xserver.proc.pid}), flush=True)
    while True:
        env.step(Action("key", key="x"))
finally:
    env.close()
