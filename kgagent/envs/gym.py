"""Gymnasium environments, and Crafter, as pixel programs: ``gym:ID``.

Why: learning must be measured on programs no one here wrote, and in CI time. A
Gymnasium environment rendered to RGB is such a program without a window: the
agent sees its rendering and acts with keys, headless and fast.

* The screen is the environment's RGB rendering (``render_mode="rgb_array"``),
  scaled by nearest neighbour to a size the agent's perception can use
  (:class:`GymOptions`). Crafter renders itself at that size, as its own window
  does (600x600 by default, ``crafter.run_gui``'s window).
* Keys become the environment's actions through the environment's own key map:
  ``get_keys_to_action()`` where it has one (the ALE's), the key map of Crafter's
  own window (``crafter/run_gui.py``: w a s d, space, tab, r t f p, 1-6; Esc quits,
  which here ends the episode), or, for a small ``Discrete`` space with no key map (or
  one whose keys have no name), the digits 0-9. Key maps in pygame 1's key codes
  (SDL 1.2: 273-276 the arrows, as in MountainCar's) get those keys' names. A hotkey
  is a chord of the map (``w+space``); ``type`` presses its characters one after
  another.
* Everything else (clicks, keys the map does not name) does nothing: the
  environment does not step and the screen stays as it was, as in Crafter's
  window with ``--wait True``, whose world waits for a key. Points outside the
  screen are refused as on a desktop.
* The environment's own options (``gym.kwargs``: the ALE's ``frameskip``, ...) go to
  ``gymnasium.make``; ``render_mode`` stays the adapter's. ale-py's games are registered
  for any id not found otherwise (``BreakoutNoFrameskip-v4``), as for ``ALE/`` ids.
* An episode cut short (a time limit) ends ``truncated``, one the game ended
  ``terminated`` (:meth:`GymEnv.end_info`; the step log's episode lines say which).

The reward, the achievements (Crafter) and the key map are the harness's
(:attr:`GymEnv.key_map`, :meth:`GymEnv.ground_truth`, :meth:`GymEnv.end_info`);
the agent holds only a Screen. Seeded: the same seed and inputs give the same
screens (Crafter's creature balancing is made to follow the seed: :func:`_chunks_in_order`).

The keys are :mod:`~kgagent.envs.gym_keys`'s, the screen :mod:`~kgagent.envs.gym_frames`'s
and the checks of an id :mod:`~kgagent.envs.gym_ids`'s; this module makes and drives the game.
"""

from __future__ import annotations

import collections
import difflib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from kgagent.actions import Action
from kgagent.config_sections import gym_kwargs
from kgagent.envs.base import Env, GroundTruth
from kgagent.envs.gym_frames import contiguous, default_size, nearest, pixels
from kgagent.envs.gym_ids import (
    CRAFTER_IDS,
    import_failure,
    register_ale,
    registry_gap,
    too_many_colons,
)
from kgagent.envs.gym_keys import CRAFTER_KEYS, CRAFTER_QUIT, Keys, keys_to_actions, presses
from kgagent.errors import ActionRefused, EnvironmentError_, KGAgentError

_GAMES_EXTRA = "pip install 'kgagent[games]'"


@dataclass
class GymOptions:
    """Settings of the ``gym:ID`` adapter, with their defaults (read from a config
    section with fields of these names when there is one)."""

    # (width, height) of the screen the agent sees; None: Crafter 600x600 like its own
    # window, others scaled by the smallest whole factor that gives >= 400 px a side
    size: tuple[int, int] | None = None
    # episode length; None: the environment's own (Crafter: 10000 steps)
    max_episode_steps: int | None = None
    # the environment's own keywords for gymnasium.make (frameskip, ...); the config's
    # ``gym.kwargs`` text is read into this table
    kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, section: Any) -> GymOptions:
        values = {f.name: getattr(section, f.name) for f in fields(cls) if hasattr(section, f.name)}
        if not isinstance(values.get("kwargs", {}), dict):
            values["kwargs"] = gym_kwargs(values["kwargs"])
        return cls(**values)


class _Crafter:
    """Crafter (pip ``crafter``, Hafner 2021) with its own window's key map."""

    def __init__(self, reward: bool, length: int | None) -> None:
        try:
            import crafter
        except ImportError:
            raise EnvironmentError_(
                f"gym:crafter needs the crafter package: {_GAMES_EXTRA}"
            ) from None
        self._crafter = crafter
        self.reward = reward
        self.length = length or 10000
        self.env: Any = None
        self.action_names: list[str] = list(crafter.constants.actions)
        self.noop = self.action_names.index("noop")
        self.keys: dict[Keys, int] = {
            frozenset([k]): self.action_names.index(a) for k, a in CRAFTER_KEYS.items()
        }
        self.quit_keys = frozenset([CRAFTER_QUIT])
        self.achievement_names: list[str] = list(crafter.constants.achievements)

    def reset(self, seed: int) -> None:
        self.env = self._crafter.Env(seed=seed, length=self.length, reward=self.reward)
        _chunks_in_order(self.env)
        self.env.reset()

    def step(self, index: int) -> tuple[float, bool, bool, dict[str, Any]]:
        _obs, reward, done, info = self.env.step(index)
        dead = info["discount"] == 0
        return float(reward), bool(dead), bool(done and not dead), info

    def native_size(self) -> tuple[int, int]:
        return 600, 600  # crafter.run_gui's window

    def frame(self, size: tuple[int, int]) -> np.ndarray:
        return contiguous(self.env.render(list(size)))

    def close(self) -> None:
        self.env = None


class _OrderedSet(dict):
    """A set of objects that iterates in the order they were added."""

    def add(self, item: Any) -> None:
        self[item] = None

    def remove(self, item: Any) -> None:
        del self[item]


def _chunks_in_order(env: Any) -> None:
    """Make a Crafter world's creature balancing depend on the seed alone.

    Crafter keeps each chunk's creatures in a ``set``, which iterates by memory address,
    and despawns ``creatures[random.randint(...)]`` from that order: the same seed and
    inputs then give another world once a creature is despawned (tests/envs/test_gym.py:
    two runs of seed 0 part within 300 random key presses). Here each world reset gives
    the chunks sets that iterate in the order creatures were added; the choice stays
    uniform. A Crafter without these internals is left as it is."""
    world = getattr(env, "_world", None)
    reset = getattr(world, "reset", None)
    if world is None or reset is None or not hasattr(world, "_chunks"):
        return

    def ordered_reset(*args: Any, **kwargs: Any) -> Any:
        out = reset(*args, **kwargs)
        world._chunks = collections.defaultdict(_OrderedSet)
        return out

    world.reset = ordered_reset


class _Gymnasium:
    """Any Gymnasium environment with a Discrete action space and an RGB rendering."""

    def __init__(
        self, env_id: str, max_episode_steps: int | None, kwargs: dict[str, Any] | None = None
    ) -> None:
        kwargs = dict(kwargs or {})
        if env_id.count(":") > 1:
            raise EnvironmentError_(too_many_colons(env_id))
        try:
            import gymnasium
        except ImportError:
            raise EnvironmentError_(f"gym:{env_id} needs gymnasium: {_GAMES_EXTRA}") from None
        if env_id.startswith("ALE/") and not register_ale():
            raise EnvironmentError_(f"gym:{env_id} needs ale-py: {_GAMES_EXTRA}")
        #: what this run made of an id without a version, for :meth:`GymEnv.notes`
        self.note: str | None = None
        made = env_id
        if ":" not in env_id:  # a ``module:ID`` id is registered by its module, in make()
            gap = registry_gap(env_id)
            if gap is not None:
                raise EnvironmentError_(f"unknown Gymnasium environment {env_id!r}: {gap}")
            made = self._versioned(env_id)
        _headless_sdl()
        kw: dict[str, Any] = {**kwargs, "render_mode": "rgb_array"}
        if max_episode_steps:
            kw["max_episode_steps"] = max_episode_steps
        try:
            self.env: Any = gymnasium.make(made, **kw)
        except gymnasium.error.Error as e:
            if kwargs and ":" not in env_id:  # the id is known: its options were refused
                raise EnvironmentError_(_refused(env_id, kwargs, str(e))) from None
            raise EnvironmentError_(f"unknown Gymnasium environment {env_id!r}: {e}") from None
        except ImportError as e:  # the module of a ``module:ID`` id, or one it imports
            raise EnvironmentError_(import_failure(env_id, e)) from None
        except TypeError as e:
            bad = re.search(r"unexpected keyword argument '([^']+)'", str(e))
            if bad and bad[1] in kwargs:
                raise EnvironmentError_(_unknown_keyword(env_id, made, bad[1])) from None
            raise EnvironmentError_(
                f"gym:{env_id} failed in make(): {type(e).__name__}: {e}"
            ) from e
        except Exception as e:  # the game's own constructor
            if kwargs:
                raise EnvironmentError_(_refused(env_id, kwargs, f"{type(e).__name__}: {e}")) from e
            raise EnvironmentError_(
                f"gym:{env_id} failed in make(): {type(e).__name__}: {e}"
            ) from e
        self.env_id = env_id
        space = self.env.action_space
        if not isinstance(space, gymnasium.spaces.Discrete):
            self.env.close()
            raise EnvironmentError_(
                f"gym:{env_id} has a {type(space).__name__} action space; keys map only to "
                "Discrete actions"
            )
        n = int(space.n)
        un = self.env.unwrapped
        meanings = getattr(un, "get_action_meanings", None)
        self.action_names = [str(m) for m in meanings()] if meanings else [str(i) for i in range(n)]
        self.noop = next((i for i, m in enumerate(self.action_names) if m.upper() == "NOOP"), 0)
        self.quit_keys: Keys = frozenset()
        self.keys = keys_to_actions(env_id, un, n)

    def _versioned(self, env_id: str) -> str:
        """``env_id`` with the version Gymnasium would take for it: its latest when it names
        none (``ALE/Breakout``: ``ALE/Breakout-v5``), said in :attr:`note` instead of
        Gymnasium's coloured warning."""
        import gymnasium
        from gymnasium.envs.registration import find_highest_version, get_env_id, parse_env_id

        if env_id in gymnasium.envs.registry:
            return env_id
        ns, base, version = parse_env_id(env_id)
        latest = find_highest_version(ns, base) if version is None else None
        if latest is None:
            return env_id
        made = get_env_id(ns, base, latest)
        self.note = (
            f"gym: gym:{env_id} names no version; this run played {made}, its latest "
            f"(gym:{made} names it)"
        )
        return made

    def reset(self, seed: int) -> None:
        self._call("reset", lambda: self.env.reset(seed=seed))

    def step(self, index: int) -> tuple[float, bool, bool, dict[str, Any]]:
        _obs, reward, terminated, truncated, info = self._call("step", lambda: self.env.step(index))
        return float(reward), bool(terminated), bool(truncated), dict(info)

    def native_size(self) -> tuple[int, int]:
        h, w = self._render().shape[:2]
        return int(w), int(h)

    def frame(self, size: tuple[int, int]) -> np.ndarray:
        return nearest(self._render()[..., :3], size)

    def _render(self) -> np.ndarray:
        return pixels(self._call("render", self.env.render), self.env_id)

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()``; what the game's own code raises is one line naming the game and the
        call (``--debug`` shows its traceback), not a traceback through Gymnasium."""
        try:
            return fn()
        except KGAgentError:
            raise
        except Exception as e:
            raise EnvironmentError_(
                f"gym:{self.env_id} failed in {what}(): {type(e).__name__}: {e}"
            ) from e

    def close(self) -> None:
        self.env.close()


def _refused(env_id: str, kwargs: dict[str, Any], why: str) -> str:
    """The one line for options of gym.kwargs that the environment refused."""
    shown = ", ".join(f"{k} = {json.dumps(v, default=str)}" for k, v in kwargs.items())
    return f"gym:{env_id} refused gym.kwargs {{{shown}}}: {' '.join(why.split())}"


def _unknown_keyword(env_id: str, made: str, name: str) -> str:
    """The one line for a keyword of gym.kwargs the environment does not take, with the
    ones it does take (its constructor's parameters), when they can be read."""
    import inspect

    import gymnasium
    from gymnasium.envs.registration import load_env_creator

    known: list[str] = []
    try:
        entry = gymnasium.spec(made).entry_point
        creator = load_env_creator(entry) if isinstance(entry, str) else entry
        params = inspect.signature(creator).parameters.values()
        known = [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
        known = [k for k in known if k not in ("self", "render_mode")]
    except Exception:  # noqa: BLE001 - only the hint is lost
        pass
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    takes = f" (it takes {', '.join(known)})" if known else ""
    return f"gym.kwargs: gym:{env_id} takes no keyword {name!r}{hint}{takes}"


def _headless_sdl() -> None:
    """Start pygame's display on SDL's offscreen driver when there is no display.

    Environments that draw with pygame (Gymnasium's classic control and toy text) start
    its display even to render to an array. Without a display SDL tries Wayland first,
    prints "error: XDG_RUNTIME_DIR is invalid or not set", then falls back to the
    offscreen driver. Asking for that driver at once gives the same display without the
    false error line; the variable is removed again, so programs started later (a
    ``desktop.launch`` on a display of their own) do not inherit it.
    """
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return
    if "SDL_VIDEODRIVER" in os.environ:
        return
    try:
        import pygame
    except ImportError:
        return
    if pygame.display.get_init():
        return
    os.environ["SDL_VIDEODRIVER"] = "offscreen"
    try:
        pygame.display.init()
    except pygame.error:
        pass  # the environment reports it when it renders
    finally:
        del os.environ["SDL_VIDEODRIVER"]


class GymEnv(Env):
    """A Gymnasium environment (or Crafter) seen as pixels and driven by its key map."""

    live = False
    restarts = True

    def __init__(self, env_id: str, seed: int = 0, options: GymOptions | None = None) -> None:
        self.env_id = env_id
        self.name = f"gym:{env_id}"
        self.opts = options or GymOptions()
        reward = CRAFTER_IDS.get(env_id.lower())
        self.is_crafter = reward is not None
        if self.is_crafter and self.opts.kwargs:
            raise EnvironmentError_(
                f"gym:{env_id} takes no gym.kwargs (they go to gymnasium.make, which does not "
                "make Crafter); gym.size and gym.max_episode_steps set its screen and length"
            )
        self._backend: _Crafter | _Gymnasium = (
            _Crafter(bool(reward), self.opts.max_episode_steps)
            if reward is not None
            else _Gymnasium(env_id, self.opts.max_episode_steps, self.opts.kwargs)
        )
        self._seed = seed
        self._episodes = 0
        self._size: tuple[int, int] = (0, 0)
        self.reset(seed)

    # ------------------------------------------------------------ the harness's view
    @property
    def key_map(self) -> dict[str, str]:
        """Key (or chord, ``w+space``) -> action name: what the keys do (harness only)."""
        names = self._backend.action_names
        out = {"+".join(sorted(k)): names[i] for k, i in self._backend.keys.items()}
        for k in self._backend.quit_keys:
            out[k] = "quit (ends the episode)"
        return out

    @property
    def action_names(self) -> list[str]:
        return list(self._backend.action_names)

    def step_index(self, index: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Step with the environment's action ``index`` (baselines that know the actions)."""
        if not 0 <= index < len(self._backend.action_names):
            raise ActionRefused(f"action index {index} is not one of {self.env_id}'s actions")
        reward, term, trunc = self._advance(index)
        self._frame = self._render()
        return self._frame, reward, term, trunc, self._step_info(True)

    # ------------------------------------------------------------ Env API
    @property
    def size(self) -> tuple[int, int]:
        return self._size

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        """A new episode; without a seed, the constructor's seed + the episode number."""
        seed = self._seed + self._episodes if seed is None else int(seed)
        self._episodes += 1
        self._backend.reset(seed)
        if self._size == (0, 0):
            native = self._backend.native_size()
            self._size = tuple(self.opts.size) if self.opts.size else default_size(native)  # type: ignore[assignment]
        self._reward_sum = 0.0
        self._steps = 0
        self._alive = True
        self._ended_by: str | None = None
        self._truncated = False
        self._unlocked: set[str] = set()
        self._frame = self._render()
        return self._frame, self._step_info(False)

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        w, h = self._size
        for px, py in action.points():
            if not (0 <= px < w and 0 <= py < h):
                raise ActionRefused(
                    f"{action.kind} at ({px}, {py}) is outside the {w}x{h} screen; nothing was executed"
                )
        total, term, trunc, stepped = 0.0, False, False, False
        for keys in presses(action):
            if keys & self._backend.quit_keys:
                trunc, self._ended_by, self._truncated = True, "quit key", True
                break
            index = self._backend.keys.get(keys)
            if index is None:
                continue  # unmapped: the environment does not step
            reward, term, trunc = self._advance(index)
            total, stepped = total + reward, True
            if term or trunc:
                break
        if stepped:
            self._frame = self._render()
        return self._frame, total, term, trunc, self._step_info(stepped)

    def observe(self) -> np.ndarray:
        return self._frame

    def ground_truth(self) -> GroundTruth:
        """Crafter: achievements unlocked in this episode (progression) and the reward sum
        (score); others: environment steps (progression) and the reward sum (score)."""
        extra: dict[str, Any] = {"env_steps": self._steps}
        if self.is_crafter:
            extra["achievements"] = sorted(self._unlocked)
            progression = float(len(self._unlocked))
        else:
            progression = float(self._steps)
        return GroundTruth(
            progression=progression, score=self._reward_sum, alive=self._alive, extra=extra
        )

    def end_info(self) -> dict[str, Any]:
        """The episode's figures; ``truncated`` when it was cut short (Gymnasium's
        ``truncated``: a time limit, Crafter's quit key) rather than terminated, which the
        runner writes as the episode line's ``reason``."""
        out: dict[str, Any] = {
            "env_steps": self._steps,
            "reward_sum": round(self._reward_sum, 4),
            "alive": self._alive,
        }
        if self._ended_by:
            out["ended_by"] = self._ended_by
            out["truncated"] = self._truncated
        if self.is_crafter:
            out["achievements"] = sorted(self._unlocked)
        return out

    def notes(self) -> list[str]:
        """Which version an id without one played (``gym:ALE/Breakout``)."""
        note = getattr(self._backend, "note", None)
        return [note] if note else []

    def close(self) -> None:
        self._backend.close()

    # ------------------------------------------------------------ internals
    def _advance(self, index: int) -> tuple[float, bool, bool]:
        reward, term, trunc, info = self._backend.step(index)
        self._reward_sum += reward
        self._steps += 1
        if term:
            self._alive, self._ended_by = False, "terminated"
        elif trunc:
            self._ended_by, self._truncated = "time limit", True
        for name, count in (info.get("achievements") or {}).items():
            if count > 0:
                self._unlocked.add(name)
        return reward, term, trunc

    def _render(self) -> np.ndarray:
        return self._backend.frame(self._size)

    def _step_info(self, stepped: bool) -> dict[str, Any]:
        return {"stepped": stepped, "reward_sum": self._reward_sum, "alive": self._alive}
