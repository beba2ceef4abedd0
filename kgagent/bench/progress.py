"""One progress bar for a grid: cells done, running, failed and interrupted (on stderr:
tqdm's on a terminal, plain lines elsewhere)."""

from __future__ import annotations

from typing import Any

from kgagent.terminal import STDERR, progress_bar


class GridProgress:
    """Counts cells as the executors start and finish them; prints a failed cell's line.
    The bar advances for a cell that ended (done or failed), not for an interrupted one."""

    def __init__(self, total: int, *, skipped: int = 0, label: str = "bench", show: bool = True):
        self.total, self.skipped = total, skipped
        self.done = self.failed = self.interrupted = self.running = 0
        self._bar: Any = None
        if show:
            self._bar = progress_bar(total, label, "cell")
            self._refresh()

    def start(self, key: str, n: int = 1) -> None:
        """``n`` cells began (or were handed to a scheduler that will begin them)."""
        self.running += n
        self._refresh()

    def finish(self, outcome: dict[str, Any]) -> None:
        self.running = max(0, self.running - 1)
        if outcome.get("status") == "done":
            self.done += 1
        elif outcome.get("status") == "interrupted":
            self.interrupted += 1
        else:
            self.failed += 1
            self.write(f"failed: {outcome.get('key')}: {outcome.get('error')}")
        self._refresh()
        if self._bar is not None and outcome.get("status") != "interrupted":
            self._bar.update(1)  # an interrupted cell is not done: it runs again next time

    def write(self, line: str) -> None:
        if self._bar is not None:
            self._bar.write(line, file=STDERR)  # tqdm's: stdout by default; the bar's stream

    def _refresh(self) -> None:
        if self._bar is not None:
            text = f"done {self.done}, running {self.running}, failed {self.failed}"
            if self.interrupted:
                text += f", interrupted {self.interrupted}"
            if self.skipped:
                text += f", finished before {self.skipped}"
            self._bar.set_postfix_str(text, refresh=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
