"""The VLM roles of the papers, as one interface.

Two implementations: :mod:`kgagent.brain.vlm` (any OpenAI-compatible endpoint
through the ``openai`` SDK) and :mod:`kgagent.brain.offline` (deterministic,
game-agnostic, visual signals only). The agent loop talks only to
:class:`Brain`. A brain never raises on a bad reply: a failed judgement is
returned as ``None`` fields / ``None`` results, and the loop treats it as "no".
Only :class:`kgagent.errors.BudgetExceeded` escapes, to stop a run cleanly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from kgagent.actions import Operation


@dataclass
class View:
    """One screenshot as a brain may see it."""

    image: np.ndarray  # RGB uint8
    feature: np.ndarray  # the state encoder's unit feature
    state_id: str


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
    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0  # HTTP requests sent, retries included (``calls`` counts roles)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Brain(ABC):
    """Fills every VLM role of Algorithm 1."""

    name: str = "brain"

    def __init__(self) -> None:
        self.usage = Usage()
        self._drained = Usage()

    def drain_step_usage(self) -> Usage:
        """Usage since the previous drain, so the loop can log tokens and cost per step.

        The running totals stay in :attr:`usage`; this only moves a mark.
        """
        u, m = self.usage, self._drained
        delta = Usage(
            calls=u.calls - m.calls,
            failed_calls=u.failed_calls - m.failed_calls,
            prompt_tokens=u.prompt_tokens - m.prompt_tokens,
            completion_tokens=u.completion_tokens - m.completion_tokens,
            cost_usd=u.cost_usd - m.cost_usd,
            requests=u.requests - m.requests,
        )
        self._drained = Usage(**vars(u))
        return delta

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
