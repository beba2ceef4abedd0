"""Bottom-up skill augmentation: the search for a new skill (Algorithm 1, lines 18-25).

A candidate skill is a validated shorter skill (the *prefix*, empty for k = 1)
plus one new atomic action. New atomic actions are tried in the papers' order:

* ``A1`` — the operations of validated single-step skills (only after a
  prefix: on an empty prefix they would merely rediscover those skills);
* ``A2`` — actions on recognised UI objects: a click on each object, and
  occasionally a double click, a right click or a drag between two objects;
* ``A3`` — residual actions: clicks on grid points outside every recognised
  object, and single key presses from ``cfg.augment.keys``.

Within a group the order is shuffled; operations already tried from this state
after this prefix (remembered in the state's statistics) come last, so repeated
visits explore new actions instead of repeating dead ones. Actions on objects
where the program just reacted (a prefix's effect, or at k = 1 the effect of the
last action that changed the screen), away from where the agent acted, come
first among the clicks (at k = 1 ahead of every key only with
``augment.focus_ahead_of_keys``): that is where a program expects the next input. Found there right after a
validated skill made that reaction, the operation extends that skill, if the
reaction marked the element the skill acted on (a selection, not a command). An
operation whose Δ is below ``cfg.augment.min_change`` changed nothing and is never kept; the
search stops at the first operation with a recognisable effect. The loop then
asks the brain to name the sequence or declare it meaningless.

Which k to build: k = 1 while the state still has untried single actions; a
longer skill (prefix of length k − 1, up to ``k_max``) is attempted with a
probability equal to the share of this state's single actions already tried.
So k grows exactly as fast as the short search space of a state gets used up.
Nothing here knows any program: objects, grid points and keys are all there is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from kgagent.actions import Operation
from kgagent.config import Config
from kgagent.perception.change import changed_regions, visual_change
from kgagent.records import Skill, UIObject

from .executor import Execution, OpResult, execute
from .inputs import InputStats, keyboard
from .observation import Observation, Observer
from .screen import Screen
from .state_stats import StateStats


@lru_cache(maxsize=1 << 16)
def op_key(op: Operation) -> str:
    """A stable identity of an atomic operation (its display names excluded)."""
    return json.dumps(op.identity(), sort_keys=True)


def ops_key(ops: Sequence[Operation]) -> str:
    """A stable identity of an operation sequence (duplicate-skill detection)."""
    return json.dumps([json.loads(op_key(o)) for o in ops])


def _inside(pt: tuple[int, int], bbox: tuple[int, int, int, int]) -> bool:
    x, y, w, h = bbox
    return x <= pt[0] < x + w and y <= pt[1] < y + h


#: A2's occasional actions on an object: (kind, wheel clicks); scrolls go up or down.
_RARE = (("double_click", 0), ("right_click", 0), ("scroll", 3), ("scroll", -3))


def object_actions(
    objects: Sequence[UIObject], rng: np.random.Generator, rare_prob: float
) -> list[Operation]:
    """A2: a click on every object, plus occasional double/right clicks, scrolls and drags."""
    clicks = [Operation("click", object_id=o.id, object_name=o.name or None) for o in objects]
    rng.shuffle(clicks)
    rare: list[Operation] = []
    for o in objects:
        if rng.random() < rare_prob:
            kind, scroll = _RARE[int(rng.integers(len(_RARE)))]
            rare.append(Operation(kind, object_id=o.id, object_name=o.name or None, scroll=scroll))
        if len(objects) > 1 and rng.random() < rare_prob:
            other = objects[int(rng.integers(len(objects)))]
            if other.id != o.id:
                rare.append(
                    Operation(
                        "drag",
                        object_id=o.id,
                        object_name=o.name or None,
                        object_id2=other.id,
                        object_name2=other.name or None,
                    )
                )
    out = list(clicks)
    for op in rare:  # "occasionally": spread among the clicks, not all at the end
        out.insert(int(rng.integers(len(out) + 1)), op)
    return out


def residual_actions(
    size: tuple[int, int],
    objects: Sequence[UIObject],
    cfg: Config,
    rng: np.random.Generator,
) -> list[Operation]:
    """A3: clicks on grid-cell centres outside every recognised object, and the keyboard."""
    w, h = size
    n = max(1, cfg.augment.residual_grid)
    ops: list[Operation] = []
    for gy in range(n):
        for gx in range(n):
            pt = (int((gx + 0.5) * w / n), int((gy + 0.5) * h / n))
            if any(_inside(pt, o.bbox) for o in objects):
                continue
            ops.append(Operation("click", point=pt))
    a = cfg.augment
    ops.extend(keyboard(a.key_groups, a.hotkeys, a.texts))
    rng.shuffle(ops)
    return ops


def reaction_focus(
    before: np.ndarray,
    after: np.ndarray,
    acted: Sequence[tuple[int, int]],
    cfg: Config,
) -> list[tuple[int, int, int, int]]:
    """Where the program reacted, away from where the agent acted: :func:`read_reaction`'s focus."""
    return read_reaction(before, after, acted, cfg)[0]


def read_reaction(
    before: np.ndarray,
    after: np.ndarray,
    acted: Sequence[tuple[int, int]],
    cfg: Config,
) -> tuple[list[tuple[int, int, int, int]], bool]:
    """The program's reaction to an action: where to look next, and whether it was a selection.

    The changed places between ``before`` and ``after`` (see
    :func:`~kgagent.perception.change.changed_regions`) split in two:

    * the focus: those away from every point the agent acted on (pressing the same
      thing again is no follow-up); empty when they cover more than
      ``cfg.augment.focus_max_area`` of the screen: a whole new screen has no
      particular place to look;
    * whether any place contains such a point: the element acted on changed itself.
      A selection marks what was selected (a card raised, a menu button lit, a caret
      in a field) and waits for the input that completes it; a command (a button
      that ends a turn, an "apply") leaves its element as it was and shows its
      effect elsewhere. Only a selection's follow-up belongs to the same skill.

    ``([], False)`` when the focus is switched off (``focus_max_area`` 0).
    """
    if cfg.augment.focus_max_area <= 0:
        return [], False
    regions: list[tuple[int, int, int, int]] = []
    marked = False
    for r in changed_regions(
        before,
        after,
        cfg.perception.change_threshold,
        grow=cfg.augment.focus_grow,
        min_pixels=cfg.augment.focus_min_pixels,
    ):
        if any(_inside(p, r) for p in acted):
            marked = True
        else:
            regions.append(r)
    h, w = before.shape[:2]
    covered = sum(rw * rh for _x, _y, rw, rh in regions)
    return (regions if covered <= cfg.augment.focus_max_area * w * h else []), marked


def split_focus(
    ops: Sequence[Operation],
    objects: Sequence[UIObject],
    regions: Sequence[tuple[int, int, int, int]],
) -> tuple[list[Operation], list[Operation]]:
    """``ops`` split into those acting first on an object centred in ``regions``, and the rest."""
    inside: set[str] = set()
    for o in objects:
        x, y, bw, bh = o.bbox
        if any(_inside((x + bw // 2, y + bh // 2), r) for r in regions):
            inside.add(o.id)
    near = [op for op in ops if op.object_id in inside]
    return near, [op for op in ops if op.object_id not in inside]


def order_untried(ops: Sequence[Operation], tried: dict[str, float]) -> list[Operation]:
    """Untried operations first, then tried ones by the change they caused.

    (Without the program's input statistics; :func:`rank_candidates` ranks with them.)
    """
    seen: set[str] = set()
    fresh: list[Operation] = []
    old: list[tuple[float, Operation]] = []
    for op in ops:
        k = op_key(op)
        if k in seen:
            continue
        seen.add(k)
        if k in tried:
            old.append((-tried[k], op))
        else:
            fresh.append(op)
    old.sort(key=lambda t: t[0])
    return fresh + [op for _, op in old]


def rank_candidates(
    first: Sequence[Operation],
    rest: Sequence[Operation],
    tried: dict[str, float],
    inputs: InputStats,
    rng: np.random.Generator,
    *,
    first_even_if_tried: bool = True,
) -> list[Operation]:
    """Candidates in the order to try them, from what the program has answered so far.

    Two devices compete for every slot, keyboard and pointer: each slot goes to the one
    with the higher draw from its response rate's posterior (Thompson sampling), so a
    device the program answers gets most tries and neither is starved while its rate is
    unknown, whatever the number of keys or objects. Within a device the order is:
    ``first`` (actions where the program just reacted, a prefix's known continuations)
    before ``rest``, and what this state (after this prefix) has not tried before what it
    has — ``first`` counting more, unless ``first_even_if_tried`` is off — then a draw of
    each input's own chance (:meth:`InputStats.sample`). Inputs that end the program, and
    keys the environment refused in this run, are left out.
    """
    seen: set[str] = set()
    drawn: list[tuple[tuple[bool, bool], float, Operation]] = []
    for group, ops in ((True, first), (False, rest)):
        for op in ops:
            k = op_key(op)
            if k in seen or inputs.ends_program(op) or inputs.is_refused(op):
                continue
            seen.add(k)
            order = (not group, k in tried) if first_even_if_tried else (k in tried, not group)
            drawn.append((order, -inputs.sample(op, rng, k in tried), op))
    drawn.sort(key=lambda t: (t[0], t[1]))
    queues: dict[str, list[Operation]] = {}
    for _, _, op in drawn:
        queues.setdefault(_device(op), []).append(op)
    for q in queues.values():
        q.reverse()  # pop() from the end
    out: list[Operation] = []
    while queues:
        device = max(sorted(queues), key=lambda d: inputs.sample_device(d, rng))
        out.append(queues[device].pop())
        if not queues[device]:
            del queues[device]
    return out


def _device(op: Operation) -> str:
    return "keyboard" if op.kind in ("key", "hotkey", "type") else "pointer"


@dataclass
class AugmentResult:
    """The outcome of one augmentation attempt."""

    found: bool  # a sequence with a recognisable effect was found
    operations: list[Operation]  # the sequence to keep (prefix + new op) when found
    prefix: Skill | None  # the validated shorter skill extended (None for k = 1)
    execution: Execution  # before = start of augmentation, after = final screen
    k: int
    prefix_executed: bool = False  # the prefix ran (and had an effect) even if nothing was found
    tried: list[tuple[str, float]] = field(default_factory=list)  # (op description, Δ)
    actions: int = 0  # concrete actions sent to the program, discarded tries included
    # The prefix is the skill whose execution made the current screen (the previous
    # one): it ran before this call, so ``execution`` covers only the new operation.
    prefix_ran_before: bool = False


def choose_prefix(
    library: Sequence[Skill],
    stats: StateStats,
    present: Callable[[str], bool],
    cfg: Config,
    rng: np.random.Generator,
) -> Skill | None:
    """A validated skill shorter than k_max whose objects are all on screen, least extended first."""
    options = [
        s
        for s in library
        if s.status == "active"
        and 1 <= len(s.operations) < cfg.augment.k_max
        and all(present(o) for o in s.object_ids())
    ]
    if not options:
        return None
    tries = np.array([len(stats.tried(s.id)) for s in options], dtype=float)
    best = np.flatnonzero(tries == tries.min())
    return options[int(rng.choice(best))]


def _echo(observer: Observer, ex: Execution, op: Operation) -> bool:
    """Whether ``op`` only showed up in a text field (``Observer.echoes``); optional as
    grounding by text is: an observer that cannot tell (a test double) finds no echo."""
    echoes = getattr(observer, "echoes", None)
    return bool(echoes is not None and echoes(ex.before, ex.after, [op]))


def augment(
    screen: Screen,
    obs: Observation,
    observer: Observer,
    stats: StateStats,
    library: Sequence[Skill],
    cfg: Config,
    rng: np.random.Generator,
    previous: Skill | None = None,
    inputs: InputStats | None = None,
) -> AugmentResult:
    """Grow one skill bottom-up from the current screen (see the module docstring).

    ``obs`` is the current screen with its objects (A2) and its "is this object on
    screen" test (prefix choice); ``observer`` grounds objects and segments a screen
    reached after a prefix. ``stats`` are the state's statistics, whose record of
    tried operations is updated in place (the caller stores it). ``previous`` is the
    validated skill whose execution made the current screen, if the caller knows one:
    an operation found where that execution made the program react is its follow-up,
    kept as ``previous`` + the operation. ``inputs``: the program's answers so far, which
    rank untried candidates and learn from every try (updated in place).
    """
    objects, present = obs.objects, obs.present
    start = screen.observe()
    size = (start.shape[1], start.shape[0])
    base = object_actions(objects, rng, cfg.augment.rare_action_prob) + residual_actions(
        size, objects, cfg, rng
    )
    tried_here = stats.tried("")
    untried_share = _untried_share(base, tried_here, inputs)
    prefix: Skill | None = None
    near_keys: set[str] = set()
    selection = False  # the previous skill left a selection open (its element reacted)
    if cfg.augment.k_max > 1 and rng.random() >= untried_share:
        prefix = choose_prefix(library, stats, present, cfg, rng)

    all_ops: list[OpResult] = []
    tried_log: list[tuple[str, float]] = []
    prefix_ops: list[Operation] = []
    actions = 0

    if prefix is None:
        k = 1
        # Where the program last reacted (the current screen is that reaction) is
        # where it expects input: actions there come first, even ones that did
        # nothing on an earlier screen of this state.
        focus: list[tuple[int, int, int, int]] = []
        reaction = screen.last_reaction
        if reaction is not None and reaction[0].shape == start.shape:
            focus, selection = read_reaction(reaction[0], start, reaction[1].points(), cfg)
        near, rest = split_focus(base, objects, focus)
        near_keys = {op_key(op) for op in near}
        if inputs is None:
            candidates = order_untried(near, tried_here) + order_untried(rest, tried_here)
        elif reaction is not None and reaction[1].points() and cfg.augment.focus_ahead_of_keys:
            # The program answered the pointer, here: its reaction's places come first.
            candidates = rank_candidates([], near, tried_here, inputs, rng) + rank_candidates(
                [], rest, tried_here, inputs, rng
            )
        else:
            candidates = rank_candidates(near, rest, tried_here, inputs, rng)
        prefix_key = ""
    else:
        k = len(prefix.operations) + 1
        pre = execute(prefix.operations, screen, observer, cfg)
        all_ops.extend(pre.ops)
        actions += pre.actions
        if not pre.ok or pre.change < cfg.augment.min_change or screen.done:
            # The prefix did not work here: nothing to extend. Report what happened.
            return AugmentResult(
                found=False,
                operations=[],
                prefix=prefix,
                execution=combine(start, screen.observe(), all_ops, pre.error, cfg),
                k=k,
                prefix_executed=pre.actions > 0,
                tried=[(f"prefix {prefix.name}", pre.change)],
                actions=actions,
            )
        prefix_ops = list(prefix.operations)
        after_prefix = screen.observe()
        objs = observer.segment(after_prefix)
        a1 = [s.operations[0] for s in library if s.status == "active" and len(s.operations) == 1]
        rng.shuffle(a1)  # type: ignore[arg-type]
        a2 = object_actions(objs, rng, cfg.augment.rare_action_prob)
        a3 = residual_actions(size, objs, cfg, rng)
        # Actions on what the prefix changed come first: where a program reacts to a
        # selection is where it expects the next input (a menu's items, a dialog's
        # buttons, highlighted targets).
        acted = [p for r in pre.ops if r.action is not None for p in r.action.points()]
        focus = reaction_focus(start, after_prefix, acted, cfg)
        near, rest = split_focus(a2, objs, focus)
        prefix_key = prefix.id
        tried_after = stats.tried(prefix_key)
        if inputs is None:
            candidates = order_untried(near + a1 + rest + a3, tried_after)
        elif acted and near:
            # The prefix clicked and the program reacted elsewhere: look there first.
            candidates = rank_candidates([], near, tried_after, inputs, rng) + rank_candidates(
                a1, rest + a3, tried_after, inputs, rng, first_even_if_tried=False
            )
        else:
            candidates = rank_candidates(
                near + a1, rest + a3, tried_after, inputs, rng, first_even_if_tried=False
            )

    budget = cfg.augment.candidates_per_length
    for op in candidates:
        if budget <= 0 or screen.done:
            break
        ex = execute([op], screen, observer, cfg)
        all_ops.extend(ex.ops)
        actions += ex.actions
        if ex.actions == 0:
            # Not groundable on this screen (a stale object), or refused before it was
            # sent (a closing key on a desktop): free, try the next one.
            if inputs is not None and ex.refused:
                inputs.refuse(op)
            continue
        budget -= 1
        tried_log.append((op.describe(), ex.change))
        stats.mark_tried(prefix_key, op_key(op), ex.change)
        if screen.done:  # the program ended: the episode is over, nothing to keep
            if inputs is not None:
                inputs.record_end(op)
            break
        answered = ex.change >= cfg.augment.min_change
        if answered and _echo(observer, ex, op):
            # Only a text field showed what was typed: no answer of the program's, and
            # nothing to keep (the text stays in the field for what is tried next).
            answered = False
            tried_log[-1] = (f"{tried_log[-1][0]} (a field's echo)", ex.change)
        if inputs is not None:
            inputs.record(op, answered)
        if answered:
            # Stop at the first recognisable effect. (A new state implies a change
            # far above min_change, so Δ alone decides.)
            if (
                prefix is None
                and previous is not None
                and selection
                and len(previous.operations) < cfg.augment.k_max
                and op_key(op) in near_keys
            ):
                # A follow-up of the previous skill (it acts where that skill made the
                # program react): the previous skill is its validated prefix.
                return AugmentResult(
                    found=True,
                    operations=[*previous.operations, op],
                    prefix=previous,
                    execution=combine(start, screen.observe(), all_ops, None, cfg),
                    k=len(previous.operations) + 1,
                    prefix_executed=True,
                    tried=tried_log,
                    actions=actions,
                    prefix_ran_before=True,
                )
            return AugmentResult(
                found=True,
                operations=prefix_ops + [op],
                prefix=prefix,
                execution=combine(start, screen.observe(), all_ops, None, cfg),
                k=k,
                prefix_executed=prefix is not None,
                tried=tried_log,
                actions=actions,
            )
        # Δ below the floor, or a field's echo: the program did nothing; nothing is kept.
    return AugmentResult(
        found=False,
        operations=[],
        prefix=prefix,
        execution=combine(start, screen.observe(), all_ops, None, cfg),
        k=k,
        prefix_executed=prefix is not None,
        tried=tried_log,
        actions=actions,
    )


def _untried_share(
    ops: Sequence[Operation], tried: dict[str, float], inputs: InputStats | None
) -> float:
    """The share of a state's single actions not tried yet, each weighed by its chance to answer.

    k grows as the short search space of a state gets used up; inputs the program is known
    not to answer hardly count, so a hundred dead keys do not hold k at 1 forever.
    """
    if not ops:
        return 0.0
    weight = [inputs.response(op) if inputs is not None else 1.0 for op in ops]
    untried = sum(w for op, w in zip(ops, weight) if op_key(op) not in tried)
    return untried / sum(weight)


def combine(
    before: np.ndarray,
    after: np.ndarray,
    ops: list[OpResult],
    error: str | None,
    cfg: Config,
) -> Execution:
    """One execution made of ``ops`` run from ``before`` to ``after`` (Δ between the two)."""
    return Execution(
        before=before,
        after=after,
        ops=ops,
        change=visual_change(before, after, cfg.perception.change_threshold),
        ok=error is None,
        error=error,
        grounding_failed=any(r.error and r.action is None for r in ops) and error is not None,
    )
