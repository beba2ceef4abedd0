"""Program-wide response counts of inputs (InputStat nodes; migration 0004).

How often each input (a key, a hotkey, a typed string, a click on an object or on the
background, by kind) was tried by augmentation in this program and how often it
changed the screen. The agent ranks its residual actions by them
(:mod:`kgagent.agent.inputs`); keeping them in memory means the next run, and every
state, starts from what the program is known to answer.
"""

from __future__ import annotations

import time

from kgagent.memory.core import MemoryCore


class Inputs(MemoryCore):
    """InputStat nodes: one per input key."""

    def input_counts(self) -> dict[str, tuple[str, int, int]]:
        """{input key: (kind, tried, changed)} for every input tried in this memory."""
        return {
            r["key"]: (r["kind"], int(r["tried"]), int(r["changed"]))
            for r in self._q("input_stats_all")
        }

    def add_input_counts(self, counts: dict[str, tuple[str, int, int]]) -> None:
        """Set the counts of these inputs (absolute values, as the agent keeps them)."""
        rows = [
            {"key": key, "kind": kind, "tried": int(tried), "changed": int(changed)}
            for key, (kind, tried, changed) in sorted(counts.items())
        ]
        if rows:
            self._q("input_stats_put", rows=rows, now=time.time())
