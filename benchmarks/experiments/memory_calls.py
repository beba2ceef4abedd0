"""Where the agent's memory time goes, by call: ``kgagent`` with every memory call counted.

The agent counts the time of its memory calls as one part (``times_ms["memory"]`` in
the step log). This runs any ``kgagent`` command in this process with that part broken
down by method (``merge_or_create_state``, ``upsert_objects``, ...): calls, total ms and
ms per call, slowest total first, printed to stderr when the command ends. It wraps the
agent's timing wrapper (:class:`kgagent.agent.timing.Timed`), so only calls the agent
makes through its memory count, and the command runs as it would without it.

    .venv/bin/python benchmarks/experiments/memory_calls.py play --env gym:crafter \\
        --steps 150 --seed 1 --memory /tmp/calls --quiet
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from typing import Any

from kgagent.agent import timing

PART = "memory"


class Calls:
    """Calls and seconds per method name."""

    def __init__(self) -> None:
        self.count: dict[str, int] = defaultdict(int)
        self.seconds: dict[str, float] = defaultdict(float)

    def add(self, name: str, seconds: float) -> None:
        self.count[name] += 1
        self.seconds[name] += seconds

    def table(self, most: int = 25) -> str:
        total = sum(self.seconds.values())
        lines = [f"{'memory call':32s} {'calls':>7s} {'total ms':>10s} {'ms/call':>8s}"]
        for name in sorted(self.seconds, key=lambda n: -self.seconds[n])[:most]:
            n, s = self.count[name], self.seconds[name]
            lines.append(f"{name:32s} {n:7d} {s * 1000:10.1f} {s / n * 1000:8.2f}")
        lines.append(f"{'all':32s} {sum(self.count.values()):7d} {total * 1000:10.1f}")
        return "\n".join(lines)


def count_memory_calls(calls: Calls) -> None:
    """From now on, the memory calls the agent times are also counted in ``calls``."""
    forward = timing.Timed.__getattr__

    def counted(self: Any, name: str) -> Any:
        attr = forward(self, name)
        if self._part != PART or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                calls.add(name, time.perf_counter() - t0)

        return call

    timing.Timed.__getattr__ = counted  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    from kgagent.cli.main import cli

    calls = Calls()
    count_memory_calls(calls)
    try:
        cli(args=args, prog_name="kgagent")  # exits with the command's code
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 1
    finally:
        print(calls.table(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
