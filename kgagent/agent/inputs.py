"""The inputs a program may respond to, and what this program has answered to so far.

Augmentation's residual actions (A3) are the whole keyboard of a person at the
screen, not a short list chosen for some program: letters, digits, arrows, function
keys, punctuation, editing and navigation keys, a bounded set of common modifier
combinations, and a few short strings typed at once. Nothing here comes from knowing
a program; no combination that closes a window or ends a session is in the list
(the desktop driver refuses those anyway, see ``kgagent.envs.keyguard``).

A program answers only a few of them. :class:`InputStats` keeps, for the whole
program (the memory, so the next run starts from it), how often each input was
tried and how often it changed the screen, at three levels (the input; its group —
letters, digits, that action on any object; the device — keyboard or pointer), and
estimates the chance that an input changes the screen from them, each level shrunk
towards the one above: twenty dead letters make the untried letters unlikely too,
while the arrows keep their group's own chance. Augmentation orders its untried
candidates by a draw from that estimate's posterior (Thompson sampling), so inputs
that answer are tried first, dead ones sink but are retried now and then (an input
may answer only on some screens: a crafting key once the materials are there), and
clicks on objects compete with keys on the same scale: on a mouse-driven program the
keys sink, on a keyboard-driven one the clicks do.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from kgagent.actions import Operation

#: Key groups of the vocabulary, by pyautogui key name. Order inside a group is the
#: keyboard's; augmentation shuffles candidates anyway.
KEY_GROUPS: dict[str, tuple[str, ...]] = {
    "letters": tuple(string.ascii_lowercase),
    "digits": tuple(string.digits),
    "arrows": ("up", "down", "left", "right"),
    "function": tuple(f"f{i}" for i in range(1, 13)),
    "punctuation": ("-", "=", "[", "]", ";", "'", ",", ".", "/", "\\", "`"),
    "whitespace": ("enter", "space", "tab", "backspace", "escape"),
    "navigation": ("delete", "home", "end", "pageup", "pagedown", "insert"),
}

#: Common modifier combinations: editing (select all, copy, paste, cut, undo, redo),
#: find, new, open, save, reverse tab, and shifted navigation. None closes a window
#: but copy, ``ctrl+c``, which interrupts a terminal's program and quits some programs:
#: the desktop refuses it unless ``desktop.allow_closing_keys`` (other programs ignore it
#: or copy).
HOTKEYS: tuple[str, ...] = (
    "ctrl+a",
    "ctrl+c",
    "ctrl+v",
    "ctrl+x",
    "ctrl+z",
    "ctrl+y",
    "ctrl+f",
    "ctrl+n",
    "ctrl+o",
    "ctrl+s",
    "shift+tab",
    "shift+up",
    "shift+down",
    "shift+left",
    "shift+right",
)


def keyboard(groups: Iterable[str], hotkeys: bool, texts: Iterable[str]) -> list[Operation]:
    """The keyboard part of the action space: key presses, hotkeys and typed strings."""
    ops = [Operation("key", key=k) for g in groups for k in KEY_GROUPS[g]]
    if hotkeys:
        ops += [Operation("hotkey", key=k) for k in HOTKEYS]
    ops += [Operation("type", text=t) for t in texts]
    return ops


def input_levels(op: Operation) -> list[tuple[str, str]]:
    """(key, level) under which an operation's responses are counted program-wide, finest first.

    A key press counts for itself, its group (letters, digits, …) and the keyboard; an
    action on an object for that object and action, that action on any object, and the
    pointer; a click on the background for itself and the pointer. The finer counts say
    what this program answers; the coarser ones are the prior for what was never tried.
    """
    if op.kind in ("key", "hotkey", "type"):
        name = op.text if op.kind == "type" else op.key
        group = {"key": _group_of(op.key or ""), "hotkey": "hotkeys", "type": "texts"}[op.kind]
        return [(f"{op.kind}:{name}", "input"), (f"group:{group}", "group"), ("keyboard", "device")]
    kind = f"{op.kind}{'+' if op.scroll > 0 else '-' if op.scroll < 0 else ''}"
    if op.object_id:
        return [
            (f"object:{op.object_id}:{kind}", "input"),
            (f"objects:{kind}", "group"),
            ("pointer", "device"),
        ]
    return [(f"background:{kind}", "group"), ("pointer", "device")]


def _group_of(key: str) -> str:
    for g, keys in KEY_GROUPS.items():
        if key in keys:
            return g
    return "other"


@dataclass
class Count:
    kind: str
    tried: int = 0
    changed: int = 0


class InputStats:
    """Program-wide response counts of inputs, and the estimates that rank them.

    ``counts`` (by :func:`input_levels` key) are loaded from memory at the start of a
    run; :meth:`record` updates them and remembers what changed, for
    :meth:`take_changes` to write back. The estimate of a level is its own counts
    shrunk towards its parent's estimate with the weight of ``prior`` tries (the
    device level: Laplace, 1 of 2); :meth:`sample` draws from the corresponding Beta
    posterior (Thompson sampling), so inputs are tried in proportion to the chance
    that they are the best ones, and an input known to be dead is still tried now
    and then.
    """

    def __init__(self, counts: dict[str, Count] | None = None, *, prior: float = 2.0) -> None:
        self.counts: dict[str, Count] = dict(counts or {})
        self.prior = prior
        self._dirty: set[str] = set()
        #: Keyboard inputs the environment refused in this run (a closing key on a
        #: desktop): refused before anything was sent, they would be drawn again every
        #: step for nothing. Not stored: the next run's configuration may allow them.
        self.refused: set[str] = set()

    def record(self, op: Operation, changed: bool) -> None:
        for key, level in input_levels(op):
            c = self.counts.setdefault(key, Count(level))
            c.tried += 1
            c.changed += int(changed)
            self._dirty.add(key)

    def record_end(self, op: Operation) -> None:
        """The program ended right after ``op`` (counted as a try that changed the screen)."""
        self.record(op, True)
        key = "ended:" + input_levels(op)[0][0]
        c = self.counts.setdefault(key, Count("ended"))
        c.tried += 1
        self._dirty.add(key)

    def record_known(self, op: Operation) -> None:
        """``op``'s last change was one a skill already makes (augmentation found it again).

        For augmentation, which looks for new skills, such a change is no news: the
        input's own estimate counts it as a try without a change (its group's and its
        device's do not, since they say whether that kind of input is answered at all).
        """
        key = "known:" + input_levels(op)[0][0]
        c = self.counts.setdefault(key, Count("known"))
        c.tried += 1
        self._dirty.add(key)

    def refuse(self, op: Operation) -> None:
        """The environment refused ``op`` before sending it. Only a keyboard input is
        remembered: whether a pointer action is refused depends on where it lands."""
        if op.kind in ("key", "hotkey", "type"):
            self.refused.add(input_levels(op)[0][0])

    def is_refused(self, op: Operation) -> bool:
        return bool(self.refused) and input_levels(op)[0][0] in self.refused

    def ends_program(self, op: Operation) -> bool:
        """The program ended after at least half of this input's tries: it quits the program
        (a quit key), it does not merely happen to precede an end (a death in a game).
        Such an input is not tried again: a restart loses the episode and teaches nothing."""
        key = input_levels(op)[0][0]
        ended, c = self.counts.get("ended:" + key), self.counts.get(key)
        return ended is not None and c is not None and 2 * ended.tried >= c.tried

    def take_changes(self) -> dict[str, Count]:
        """The counts recorded since the last call, to be written to memory."""
        out = {k: self.counts[k] for k in sorted(self._dirty)}
        self._dirty.clear()
        return out

    def _posterior(self, op: Operation) -> tuple[float, float]:
        """Beta(a, b) of the finest level: each level's counts on top of its parent's mean."""
        mean, a, b = 0.5, 1.0, 1.0
        levels = input_levels(op)
        for key, _level in reversed(levels):
            c = self.counts.get(key)
            tried, changed = (c.tried, c.changed) if c else (0, 0)
            if key == levels[0][0]:
                known = self.counts.get("known:" + key)
                changed = max(0, changed - (known.tried if known else 0))
            a = changed + self.prior * mean
            b = tried - changed + self.prior * (1.0 - mean)
            mean = a / (a + b)
        return a, b

    def sample_device(self, device: str, rng: np.random.Generator) -> float:
        """A draw of how often ``device`` (``keyboard`` or ``pointer``) changes the screen."""
        c = self.counts.get(device)
        tried, changed = (c.tried, c.changed) if c else (0, 0)
        return float(rng.beta(changed + 1, tried - changed + 1))

    def response(self, op: Operation) -> float:
        """Estimated chance that ``op`` changes the screen (the posterior mean)."""
        a, b = self._posterior(op)
        return a / (a + b)

    def sample(self, op: Operation, rng: np.random.Generator, tried_here: bool = False) -> float:
        """A draw of that chance from its posterior (Thompson sampling).

        ``tried_here``: the state already saw this input (augmentation keeps no effect it
        found twice): one more try without a change, at the finest level.
        """
        a, b = self._posterior(op)
        if tried_here:
            mean = a / (a + b)
            a, b = self.prior * mean, 1.0 + self.prior * (1.0 - mean)
        return float(rng.beta(a, b))
