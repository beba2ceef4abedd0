"""What every test shares: the hang-up signal as a terminal gives it.

Under ``nohup`` (``nohup make test``) SIGHUP is ignored, and an ignored signal stays
ignored in every child across ``exec``: the tests that hang up a ``kgagent`` command
would find it deaf, as ``nohup kgagent play`` rightly is. So the test process catches
SIGHUP instead (doing nothing, so that a closed terminal still does not stop the
suite); a caught signal is reset to its default in a child, which then takes SIGHUP as
one started from a terminal does.
"""

from __future__ import annotations

import signal

if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, lambda signum, frame: None)
