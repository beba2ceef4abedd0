"""The ids of ``gym:ID``: whether one can be made here (Gymnasium's registry, ale-py's
games, a ``MODULE:ID``'s module), and if not, the one line that says why."""

from __future__ import annotations

import importlib
import re

#: Crafter's ids (the adapter's own, not Gymnasium's), and whether each gives a reward.
CRAFTER_IDS = {"crafter": True, "crafterreward-v1": True, "crafternoreward-v1": False}


def import_failure(env_id: str, e: ImportError) -> str:
    """The one line for a ``MODULE:ID`` id whose module (or one it imports) does not import."""
    cause = e.__cause__ if isinstance(e.__cause__, ImportError) else e
    return (
        f"cannot make gym:{env_id}: {' '.join(str(cause).split())} (in gym:MODULE:ID, MODULE "
        "must be importable here and register ID with Gymnasium)"
    )


def too_many_colons(env_id: str) -> str:
    """The one line for an id with more than one ':'."""
    return f"gym:{env_id} is not an environment id: use gym:ID or gym:MODULE:ID (one ':')"


def register_ale() -> bool:
    """Register ale-py's Atari games with Gymnasium (``ALE/Breakout-v5``, and the older
    ``Breakout-v4``, ``BreakoutNoFrameskip-v4``); False when ale-py is not installed."""
    try:
        import ale_py
        import gymnasium
    except ImportError:
        return False
    gymnasium.register_envs(ale_py)
    return True


def _lookup(env_id: str) -> str | None:
    """Why Gymnasium's registry, as it is now, lacks ``env_id``, on one line; None when it
    has it (an id without a version: when it has a version of it)."""
    import gymnasium
    from gymnasium.envs.registration import find_highest_version, parse_env_id

    try:
        if env_id in gymnasium.envs.registry:
            return None
        ns, base, version = parse_env_id(env_id)
        if version is None and find_highest_version(ns, base) is not None:
            return None  # gymnasium.make takes the latest version
        gymnasium.spec(env_id)  # raises, saying which part is unknown
    except gymnasium.error.Error as e:
        return " ".join(str(e).split()).rstrip(".")
    return None


def registry_gap(env_id: str) -> str | None:
    """Why Gymnasium's registry lacks the id ``env_id`` (no ``MODULE:``), in its own words
    on one line; None when it has it, or when this cannot tell here (gymnasium, or ale-py
    for ``ALE/`` ids, not installed: making it says so).

    An id the registry lacks is looked up again after ale-py registers its games, as
    making it does (``BreakoutNoFrameskip-v4``); one that only ale-py's namespace has
    (``Breakout-v5``: ``ALE/Breakout-v5``) is named in a "did you mean". Options written
    into the id (``?frameskip=1``) are pointed to ``gym.kwargs``."""
    try:
        import gymnasium  # noqa: F401 - without it, making the environment says so
    except ImportError:
        return None
    if env_id.startswith("ALE/") and not register_ale():
        return None
    gap = _lookup(env_id)
    if gap is not None and not env_id.startswith("ALE/") and register_ale():
        gap = _lookup(env_id)
        if gap is not None and _lookup(f"ALE/{env_id}") is None:
            gap += f"; did you mean gym:ALE/{env_id}?"
    if gap is not None and re.search(r"[?&=]", env_id):
        gap += " (an environment's options go in gym.kwargs: --set 'gym.kwargs={frameskip = 1}')"
    return gap


def unknown_reason(env_id: str) -> str | None:
    """Why ``gym:env_id`` cannot be made, found before anything else is set up (``kgagent
    play`` opens the memory first); None when it can, or when only building it can tell
    (:func:`registry_gap`; Crafter is the adapter's own). The module of a ``MODULE:ID`` id
    is imported, as making it would."""
    if env_id.lower() in CRAFTER_IDS:
        return None
    if env_id.count(":") > 1:
        return too_many_colons(env_id)
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as e:
            return import_failure(env_id, e)
    gap = registry_gap(name)
    return None if gap is None else f"unknown Gymnasium environment {env_id!r}: {gap}"
