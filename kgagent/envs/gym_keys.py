"""The keys of ``gym:ID``: the key chords an action presses, and which of the
environment's actions each chord steps (its own key map, Crafter's window's, or the
digits), by pyautogui key name."""

from __future__ import annotations

from typing import Any

from kgagent.actions import Action
from kgagent.envs.keyguard import normalize
from kgagent.errors import EnvironmentError_

Keys = frozenset[str]

#: Crafter's own window's key map (crafter/run_gui.py, ``keymap``), by pyautogui key name.
CRAFTER_KEYS: dict[str, str] = {
    "a": "move_left",
    "d": "move_right",
    "w": "move_up",
    "s": "move_down",
    "space": "do",
    "tab": "sleep",
    "r": "place_stone",
    "t": "place_table",
    "f": "place_furnace",
    "p": "place_plant",
    "1": "make_wood_pickaxe",
    "2": "make_stone_pickaxe",
    "3": "make_iron_pickaxe",
    "4": "make_wood_sword",
    "5": "make_stone_sword",
    "6": "make_iron_sword",
}
CRAFTER_QUIT = "escape"  # run_gui.py stops on Esc

#: SDL 1.2's key codes above 255 (``SDLK_UP`` = 273, ...), which key maps written for
#: pygame 1 still use (Gymnasium's MountainCar: 275/276 for the arrows); pygame 2 gives
#: these keys other codes and no name for the old ones.
_SDL1_KEYS: dict[int, str] = {
    273: "up", 274: "down", 275: "right", 276: "left", 277: "insert", 278: "home",
    279: "end", 280: "pageup", 281: "pagedown",
    **{282 + i: f"f{i + 1}" for i in range(15)},
}  # fmt: skip


def key_name(k: Any) -> str:
    """A key of an environment's key map as a pyautogui key name ("" when it has none)."""
    if isinstance(k, int):
        if k < 256:
            k = chr(k)
        elif k in _SDL1_KEYS:
            return _SDL1_KEYS[k]
        else:
            try:
                import pygame

                return normalize(pygame.key.name(k))
            except Exception:  # noqa: BLE001 - no pygame: a key without a name
                return ""
    names = {" ": "space", "\t": "tab", "\r": "enter", "\n": "enter", "\x1b": "escape"}
    return normalize(names.get(str(k), str(k)))


def keys_to_actions(env_id: str, un: Any, n: int) -> dict[Keys, int]:
    """The key chords of the environment ``un`` (unwrapped, ``n`` Discrete actions) and
    the action each steps: its ``get_keys_to_action()``, else the digits 0-9."""
    get = getattr(un, "get_keys_to_action", None)
    if get is not None:
        out: dict[Keys, int] = {}
        for combo, action in get().items():
            combo = combo if isinstance(combo, (tuple, list)) else (combo,)
            keys = frozenset(key_name(k) for k in combo)
            if keys and "" not in keys:  # a chord with a key that has no name is left out
                out[keys] = int(action)
        if out:
            return out
    if n <= 10:
        return {frozenset([str(i)]): i for i in range(n)}
    raise EnvironmentError_(
        f"gym:{env_id} has no key map (get_keys_to_action) and {n} actions, more than "
        "the 10 digit keys"
    )


def presses(action: Action) -> list[Keys]:
    """The key chords an action presses, in order (none for pointer actions)."""
    if action.kind in ("key", "hotkey"):
        key = action.key or ""
        parts = [key] if len(key) <= 1 else [k for k in key.split("+") if k] or [key]
        return [frozenset(key_name(k.strip().lower() or k) for k in parts)]
    if action.kind == "type":
        return [frozenset([key_name(c.lower())]) for c in action.text or ""]
    return []
