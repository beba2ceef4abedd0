"""The offline brain: every VLM role from visual signals alone, no language model.

Why it exists: most machines have no model endpoint, yet ``kgagent play`` must
work on a fresh one (SPEC "The offline brain"). Every answer here is computed
from what the agent already measures — the visual change Δ, whether a state is
new, and the state encoder's unit features — so it is deterministic, free, and
knows nothing about any particular program.

Role by role (thresholds are :class:`~kgagent.config.BrainConfig` fields):

* ``describe_skill``: meaningful iff something changed (Δ > ``offline_min_change``,
  or the after-state differs from the before-state, or it is new to the graph).
  The skill is named from what it acts on, as a person would: its last operation after
  the ones before it, objects by their names (their text in quotes when they show
  text: ``press 1 after click "Open"``), keys by theirs. When the last operation acts
  on nothing that shows text and the loop passed the text read on the two screens
  (``View.labels``), the first label that appeared is added (``press e -> "Settings"``). The description states the
  measured effect and the text that appeared or vanished.
* ``evaluate``: progressive iff something changed and the after-screen is new in
  this episode: its state was not visited earlier in the episode, or the screen is a
  configuration not seen before in the episode even though it merged into a known
  state (``Transition.new_screen_in_episode``: only a few numbers or widgets changed). Consistent iff the feature change
  (after − before) points the same way as the mean of the skill's newest
  ``offline_effect_window`` past effects (cosine ≥ ``offline_consistency_cos``);
  with no usable past effect, consistent iff something changed.
  An experimental signal, off by default: with ``offline_text_progress`` on and labels
  passed for both screens, progress also needs the text on screen to have changed
  (:func:`text_changed`).
* ``choose_cluster``: the cluster with the highest cosine between the current
  feature and any of its states' features, if ≥ ``offline_cluster_cos``.
* ``refine_skill``: the description rewritten from the latest measurement;
  ``None`` when nothing was measured or the text would not change.
* ``cluster_skills``: each skill's mean source-state feature is matched to the
  existing clusters (max cosine over their states, ≥ ``offline_cluster_cos``),
  else to new clusters opened earlier in the same call, else it opens a new one.
  Skills without source features each open their own cluster.

Ties are broken by id, never by input order or chance, so the seed does not
change any answer; it is accepted for the same constructor as other brains.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kgagent.actions import Operation
from kgagent.brain.base import (
    Brain,
    ClusterAssignment,
    ClusterView,
    Judgement,
    SkillText,
    SkillView,
    Transition,
    View,
)
from kgagent.brain.hygiene import LABEL_MAX, quote
from kgagent.brain.prompts import operations_text, skill_phrase
from kgagent.brain.relevance import unit
from kgagent.config import BrainConfig
from kgagent.records import control_key, label_key, names_control

_EPS = 1e-9


_unit = unit  # ``v`` normalised, or None when it is missing, zero or not finite


def _unit_rows(x: np.ndarray | None, dim: int) -> np.ndarray | None:
    """The usable rows of a (k, dim) feature array, each normalised; ``None`` if none."""
    if x is None:
        return None
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] != dim:
        return None
    norms = np.linalg.norm(a, axis=1)
    keep = np.isfinite(norms) & (norms > _EPS)
    if not keep.any():
        return None
    return a[keep] / norms[keep, None]


def _mean_unit(x: np.ndarray | None) -> np.ndarray | None:
    """The normalised mean of a feature array's rows (its "centre" direction)."""
    if x is None:
        return None
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        return _unit(a)
    if a.ndim != 2 or a.shape[0] == 0:
        return None
    rows = _unit_rows(a, a.shape[1])
    return None if rows is None else _unit(rows.mean(axis=0))


def _score(cosines: np.ndarray) -> float:
    """The best cosine, rounded: BLAS may differ in the last bits between runs (memory
    alignment picks the kernel), and ties must then fall to the id, reproducibly."""
    return round(float(np.max(cosines)), 6)


#: Labels named in a description (appeared, vanished): a description is a sentence.
_DESCRIBED_LABELS = 3


def _labels(view: View) -> list[str]:
    """The text read on a screen, when the loop passed it (``View.labels``)."""
    return [str(x) for x in (getattr(view, "labels", None) or ())]


def text_change(tr: Transition) -> tuple[list[str], list[str]]:
    """(appeared, vanished): labels on one screen of the transition and not on the other,
    in screen order. Compared by their letters (:func:`~kgagent.records.control_key`): a
    label whose number changed ("Level 2" → "Level 3") neither appeared nor vanished."""
    before = [x for x in _labels(tr.before) if names_control(x)]
    after = [x for x in _labels(tr.after) if names_control(x)]
    kb, ka = {control_key(x) for x in before}, {control_key(x) for x in after}
    appeared = [x for x in after if control_key(x) not in kb]
    return appeared, [x for x in before if control_key(x) not in ka]


def text_changed(tr: Transition) -> bool | None:
    """Whether the text on screen changed (a label appeared or vanished, a number on one
    changed); ``None`` when the loop passed no labels for either screen."""
    before, after = _labels(tr.before), _labels(tr.after)
    if not before and not after:
        return None
    return {label_key(x) for x in before} != {label_key(x) for x in after}


def _shows_text(op: Operation) -> bool:
    """Whether an operand is called by its text (object names are quoted labels then)."""
    return bool(op.object_name) and op.object_name.startswith('"')


def _quoted(labels: list[str]) -> str:
    """Labels as a description names them, quoted safely (they are screen text, and the
    description goes into later prompts)."""
    return ", ".join(quote(x, LABEL_MAX) for x in labels[:_DESCRIBED_LABELS])


class OfflineBrain(Brain):
    """Deterministic, game-agnostic stand-in for the VLM (see the module docstring)."""

    name = "offline"

    def __init__(self, cfg: BrainConfig | None = None, *, seed: int = 0) -> None:
        super().__init__()
        self.cfg = cfg or BrainConfig()
        self.seed = seed
        roles = {"describe_skill"}  # names and descriptions say what text appeared
        if self.cfg.offline_text_progress:
            roles.add("evaluate")
        self.label_roles = frozenset(roles)

    def figures(self) -> dict[str, Any]:
        """Every role call is answered offline, none by a request (see :meth:`Brain.figures`)."""
        return {**super().figures(), "offline_calls": self.usage.calls}

    # ---------------------------------------------------------------- signals
    def changed(self, tr: Transition) -> bool:
        """Something happened: visible change, another state, or a new one."""
        return (
            tr.change > self.cfg.offline_min_change
            or tr.new_in_graph
            or tr.before.state_id != tr.after.state_id
        )

    @staticmethod
    def _where(tr: Transition) -> str:
        if tr.new_in_graph:
            return "new screen"
        if tr.before.state_id != tr.after.state_id:
            return "known screen"
        return "same screen"

    @staticmethod
    def _effect(tr: Transition) -> np.ndarray | None:
        a = np.asarray(tr.after.feature, dtype=np.float64).ravel()
        b = np.asarray(tr.before.feature, dtype=np.float64).ravel()
        return a - b if a.shape == b.shape else None

    def _consistency(self, skill: SkillView, tr: Transition) -> tuple[bool, float | None, int]:
        """(consistent, cosine or None, number of past effects used)."""
        effect = self._effect(tr)
        dim = effect.size if effect is not None else -1
        past = [
            np.asarray(e, dtype=np.float64).ravel()
            for e in skill.past_effects[-self.cfg.offline_effect_window :]
        ]
        past = [e for e in past if e.size == dim]
        mean = _unit(np.mean(past, axis=0)) if past else None
        if mean is None:  # no expectation yet: any real change is "as described"
            return self.changed(tr), None, len(past)
        e = _unit(effect)
        if e is None:  # the skill is known to move the features, and this time it did not
            return False, 0.0, len(past)
        cos = float(e @ mean)
        return cos >= self.cfg.offline_consistency_cos, cos, len(past)

    # ------------------------------------------------------------------ roles
    def describe_skill(self, operations: list[Operation], tr: Transition) -> SkillText | None:
        self.usage.calls += 1
        if not self.changed(tr):
            return None  # SPEC: operations that change nothing are never kept
        ops = operations_text(operations)
        where = self._where(tr)
        appeared, vanished = text_change(tr)
        name = skill_phrase(operations)
        if appeared and not tr.echo and not _shows_text(operations[-1]):
            name = f"{name} -> {quote(appeared[0], LABEL_MAX)}"
        description = (
            f"{ops}: changes {tr.change:.1%} of the screen and leads to the {where} "
            f"(state {tr.after.state_id})."
        )
        if tr.echo:
            description += " Only a text field shows what was typed."
        elif appeared:
            description += f" Shows {_quoted(appeared)}."
        if vanished:
            description += f" Hides {_quoted(vanished)}."
        return SkillText(name, description)

    def evaluate(self, skill: SkillView, tr: Transition) -> Judgement:
        self.usage.calls += 1
        changed = self.changed(tr)
        progressive = bool(changed and (tr.new_in_episode or tr.new_screen_in_episode))
        consistent, cos, n = self._consistency(skill, tr)
        cos_text = "n/a" if cos is None else f"{cos:.3f}"
        reason = (
            f"change={tr.change:.4f} new_in_episode={tr.new_in_episode} "
            f"new_screen_in_episode={tr.new_screen_in_episode} "
            f"effect_cos={cos_text} over {n} past effect(s)"
        )
        read = text_changed(tr)
        if read is not None and self.cfg.offline_text_progress:
            progressive = progressive and read
            reason += f" text_changed={read}"
        if tr.echo:  # the program did nothing yet: a field shows what was typed
            progressive = False
            reason += " echo"
        return Judgement(bool(consistent), progressive, reason)

    def choose_cluster(self, view: View, clusters: list[ClusterView]) -> str | None:
        self.usage.calls += 1
        f = _unit(view.feature)
        if f is None:
            return None
        scored: list[tuple[float, str]] = []
        for c in clusters:
            rows = _unit_rows(c.state_features, f.size)
            if rows is not None:
                scored.append((_score(rows @ f), c.id))
        if not scored:
            return None
        score, cid = min(scored, key=lambda t: (-t[0], t[1]))
        return cid if score >= self.cfg.offline_cluster_cos else None

    def refine_skill(self, skill: SkillView, tr: Transition) -> SkillText | None:
        self.usage.calls += 1
        if not self.changed(tr):
            return None  # nothing measured this time: nothing to add
        consistent, cos, n = self._consistency(skill, tr)
        if n == 0:
            agreement = "first measured effect"
        elif cos is None:
            agreement = f"{n} past execution(s) show no common direction"
        else:
            verdict = "agrees" if consistent else "disagrees"
            agreement = f"effect {verdict} with {n} past execution(s) (cos {cos:.2f})"
        description = (
            f"{operations_text(skill.operations)}: changes about {tr.change:.0%} of the screen "
            f"and leads to the {self._where(tr)}; {agreement}."
        )
        if description == skill.description:
            return None
        return SkillText(skill.name, description)

    def cluster_skills(
        self, skills: list[SkillView], clusters: list[ClusterView]
    ) -> list[ClusterAssignment]:
        """Skills with ``cluster_id=None`` and the same ``new_name`` share one new cluster."""
        self.usage.calls += 1
        out: list[ClusterAssignment] = []
        opened: list[tuple[np.ndarray, str, str]] = []  # (centre, name, description)
        taken = {c.name for c in clusters}
        for skill in skills:
            centre = _mean_unit(skill.source_features)
            if centre is None:  # nothing known about where it is used: its own cluster
                name, desc = self._new_cluster_text(skill, taken)
                out.append(ClusterAssignment(skill.id, None, name, desc))
                continue
            best: tuple[float, str] | None = None
            for c in sorted(clusters, key=lambda c: c.id):
                rows = _unit_rows(c.state_features, centre.size)
                if rows is None:
                    continue
                score = _score(rows @ centre)
                if best is None or score > best[0]:
                    best = (score, c.id)
            if best is not None and best[0] >= self.cfg.offline_cluster_cos:
                out.append(ClusterAssignment(skill.id, best[1]))
                continue
            match = None
            best_new = self.cfg.offline_cluster_cos
            for other, name, desc in opened:
                if other.size == centre.size and float(other @ centre) >= best_new:
                    best_new, match = float(other @ centre), (name, desc)
            if match is None:
                match = self._new_cluster_text(skill, taken)
                opened.append((centre, *match))
            out.append(ClusterAssignment(skill.id, None, *match))
        return out

    @staticmethod
    def _new_cluster_text(skill: SkillView, taken: set[str]) -> tuple[str, str]:
        """A new cluster's name, from the skill that opens it, unlike every name in
        ``taken`` (which it joins): the name is what groups a call's new clusters."""
        base = f"group: {skill.name}"
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base} ({n})"
        taken.add(name)
        return name, f"Skills used on the same screens as '{skill.name}'."
