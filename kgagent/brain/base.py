"""The VLM roles of the papers, as one interface.

Two implementations: :mod:`kgagent.brain.vlm` (any OpenAI-compatible endpoint
through the ``openai`` SDK) and :mod:`kgagent.brain.offline` (deterministic,
game-agnostic, visual signals only). The agent loop talks only to
:class:`Brain`. A brain never raises on a bad reply: the VLM brain answers a
role it could not get from its endpoint with the offline brain's answer and
says so in a note (:meth:`Brain.take_notes`), which the loop writes into the
step record. Only :class:`kgagent.errors.BudgetExceeded` and
:class:`kgagent.brain.endpoint.EndpointUnusable` escape, to stop a run cleanly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgagent.actions import Operation


@dataclass
class View:
    """One screenshot as a brain may see it."""

    image: np.ndarray  # RGB uint8
    feature: np.ndarray  # the state encoder's unit feature
    state_id: str
    #: the text the agent read on the screen, top to bottom (empty: not read, or none);
    #: the loop fills it for the roles in :attr:`Brain.label_roles`
    labels: tuple[str, ...] = ()


@dataclass
class Transition:
    """Before/after of one skill execution, with the signals the loop measured."""

    before: View
    after: View
    change: float  # Δ, SPEC visual change
    new_in_episode: bool  # `after` state was not visited earlier in this episode
    new_in_graph: bool  # `after` state did not exist in the graph before this step
    #: the after-screenshot is a configuration not seen before in this episode, even if
    #: it merged into a known state node (e.g. only numbers changed); see docs/agent.md
    new_screen_in_episode: bool = False
    #: all the skill's typing did was show up in a text field (``Observer.echoes``;
    #: kgagent.perception.echo): no reaction of the program
    echo: bool = False


@dataclass
class SkillView:
    id: str
    name: str
    description: str
    operations: list[Operation]
    fitness: float = 0.0
    executions: int = 0
    #: feature changes (after − before) of past successful executions, newest last
    past_effects: list[np.ndarray] = field(default_factory=list)
    #: features of states the skill was executed from (k, dim); may be empty.
    #: The offline brain groups new skills into clusters by them.
    source_features: np.ndarray | None = None


@dataclass
class ClusterView:
    id: str
    name: str
    description: str
    skill_names: list[str]
    #: features of states where the cluster's skills were executed (k, dim); may be empty
    state_features: np.ndarray | None = None


@dataclass
class Judgement:
    """Evaluation of one execution; ``None`` = the brain could not judge."""

    consistent: bool | None  # → R_semantic
    progressive: bool | None  # → R_progress
    reason: str = ""


@dataclass
class SkillText:
    name: str
    description: str
    operations: list[Operation] | None = None  # a refinement may rewrite the steps too


@dataclass
class ClusterAssignment:
    skill_id: str
    cluster_id: str | None  # an existing cluster, or None for a new one
    new_name: str = ""
    new_description: str = ""


@dataclass
class Usage:
    """Running totals of a brain; ``usage - earlier_copy`` is what one step used."""

    calls: int = 0  # role calls
    failed_calls: int = 0  # role calls the endpoint could not answer (answered offline)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0  # HTTP requests sent, retries included (``calls`` counts roles)
    #: of ``prompt_tokens + completion_tokens``, how many are estimates (the reply had
    #: no ``usage``; see :mod:`kgagent.brain.pricing`)
    estimated_tokens: int = 0
    #: of ``completion_tokens``, those the server says the model spent thinking (its
    #: ``usage.completion_tokens_details.reasoning_tokens``; 0 where it does not say)
    reasoning_tokens: int = 0
    #: role calls answered by the offline rules without a request: the endpoint failed,
    #: its circuit breaker was open, or the answer was known (nothing changed)
    offline_calls: int = 0
    #: role calls that got no answer at all: the run stopped during them (the budget,
    #: an unusable endpoint), so ``calls`` = answered by the model + offline + these
    unanswered_calls: int = 0
    #: of ``requests``, those sent again after a failed one (backoff retries) ...
    retries: int = 0
    #: ... of them after HTTP 429 (rate limited), and the seconds waited before those
    rate_limited: int = 0
    rate_limit_wait_s: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def copy(self) -> Usage:
        return Usage(**vars(self))

    def __sub__(self, other: Usage) -> Usage:
        """What was used since ``other`` (an earlier copy of the same running totals)."""
        return Usage(**{k: v - getattr(other, k) for k, v in vars(self).items()})


class Brain(ABC):
    """Fills every VLM role of Algorithm 1."""

    name: str = "brain"
    #: roles whose views should carry the screen's text (``View.labels``): reading a
    #: screen that was not segmented costs a segmentation, so only roles that use it
    label_roles: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self.usage = Usage()  # running totals; the loop logs ``usage - copy`` per step
        self._notes: list[str] = []
        self._dropped_notes = 0

    #: notes kept between two :meth:`take_notes` (a caller that never takes them
    #: must not grow memory without bound); the rest are counted
    MAX_NOTES = 100

    def note(self, text: str) -> None:
        """Record one line about how a role was answered (a degradation, a pause)."""
        notes = self.__dict__.setdefault("_notes", [])
        if len(notes) < self.MAX_NOTES:
            notes.append(" ".join(str(text).split()))
        else:
            self._dropped_notes = getattr(self, "_dropped_notes", 0) + 1

    def take_notes(self) -> list[str]:
        """The notes since the previous call, oldest first; the list is cleared.

        The loop calls it once per step and stores the lines in the step record
        (``brain_notes``), so a reader of the log sees which answers did not come
        from the configured model. A brain that never degrades returns ``[]``.
        """
        notes = list(getattr(self, "_notes", None) or [])
        dropped = getattr(self, "_dropped_notes", 0)
        if dropped:
            notes.append(f"(and {dropped} more notes like these)")
        self._notes, self._dropped_notes = [], 0
        return notes

    def interrupt(self) -> None:
        """The run is stopping (the first Ctrl-C or SIGTERM): ask nothing more.

        Called from the runner's signal handler. A brain with an endpoint sends no new
        request, retry or backoff wait from now on, abandons the one in progress and
        answers the remaining role calls offline, with a note. A brain without one has
        nothing to do.
        """
        return None

    def describe(self) -> dict[str, Any]:
        """Who answers the roles, for the run summary: ``kind``, ``model``, ``endpoint``
        (None where the brain has none)."""
        return {"kind": getattr(self, "name", "brain"), "model": None, "endpoint": None}

    def figures(self) -> dict[str, Any]:
        """:meth:`describe` and the running totals of the run summary: role calls, HTTP
        requests (retries, those after HTTP 429 and the seconds waited for them), failed
        calls, calls answered offline, calls left unanswered."""
        u = self.usage
        return {
            **self.describe(),
            "calls": u.calls,
            "requests": u.requests,
            "retries": u.retries,
            "rate_limited": u.rate_limited,
            "rate_limit_wait_s": round(u.rate_limit_wait_s, 3),
            "failed_calls": u.failed_calls,
            "offline_calls": u.offline_calls,
            "unanswered_calls": u.unanswered_calls,
        }

    @abstractmethod
    def describe_skill(self, operations: list[Operation], tr: Transition) -> SkillText | None:
        """Name and describe a newly found skill, or ``None`` if it is meaningless."""

    @abstractmethod
    def evaluate(self, skill: SkillView, tr: Transition) -> Judgement:
        """is_consistent (R_semantic) and is_progressive (R_progress)."""

    @abstractmethod
    def choose_cluster(self, view: View, clusters: list[ClusterView]) -> str | None:
        """The action cluster that best fits the screen, or ``None`` if none fits."""

    @abstractmethod
    def refine_skill(self, skill: SkillView, tr: Transition) -> SkillText | None:
        """Eq. 8: a rewritten name/description for a skill (``None``: keep it)."""

    @abstractmethod
    def cluster_skills(
        self, skills: list[SkillView], clusters: list[ClusterView]
    ) -> list[ClusterAssignment]:
        """Assign new skills to existing clusters or open new ones."""
