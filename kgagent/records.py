"""Plain records shared by memory, reasoning and the agent (no engine types, no storage imports)."""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field

from kgagent.actions import Operation

SKILL_STATUSES = ("active", "suspended", "pruned")


@dataclass
class StateHit:
    """Result of merge-or-create."""

    id: str
    created: bool  # a new node was made (R_novel's "not in the graph before")
    cosine: float  # similarity to the node merged into (1.0 when created)
    visits: int
    similar_added: int = 0
    similar_removed: int = 0


@dataclass
class Skill:
    id: str
    name: str
    description: str
    operations: list[Operation]
    fitness: float = 0.0  # φ_σ, bounded (exponentially decayed mean of R_total)
    executions: int = 0  # n_σ
    status: str = "active"
    parent_id: str | None = None  # the skill this one was grown from
    failures: int = 0  # consecutive failed executions (suspension)
    low_rewards: int = 0  # consecutive R_total < r_prune (removal)
    created_at: float = 0.0

    def operations_json(self) -> str:
        return json.dumps([op.to_dict() for op in self.operations], sort_keys=True)

    @staticmethod
    def parse_operations(text: str) -> list[Operation]:
        return [Operation.from_dict(d) for d in json.loads(text or "[]")]

    def object_ids(self) -> list[str]:
        out: list[str] = []
        for op in self.operations:
            out.extend(o for o in op.object_ids() if o not in out)
        return out


@dataclass
class HQCandidate:
    """Eq. 3: a skill on an outgoing skill edge of the neighbourhood, best weight."""

    skill_id: str
    weight: float
    from_state: str
    to_state: str


@dataclass
class SkillEdge:
    src: str
    dst: str
    skill_id: str
    weight: float
    change: float
    count: int
    r_total: float


def label_key(text: str) -> str:
    """The comparable form of a text label: NFKC, case-folded, without whitespace.

    A text reader drops or adds spaces and mixes full- and half-width punctuation;
    none of that makes two labels different.
    """
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def control_key(text: str) -> str:
    """What identifies a control in its label: its letters, case-folded (NFKC).

    Digits and signs are values shown on a control ("Open (3)", "Level 2", "12/80"):
    they change while the control stays the same one.
    """
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).casefold() if ch.isalpha())


def names_control(text: str) -> bool:
    """Whether a label can identify a control: at least two letters (:func:`control_key`).

    A bare number or a single glyph names nothing: it never makes two objects one,
    never tells two apart, and is never looked for on a screen.
    """
    return len(control_key(text)) >= 2


@dataclass
class UIObject:
    id: str
    #: what skills and logs call it: its label in quotes ('"Save"') when it shows
    #: text, else ``object_N``
    name: str
    bbox: tuple[int, int, int, int]  # where it was first seen
    phash: int
    crop_blob: str  # blob id (sha256) of the reference crop PNG
    created: bool = False
    #: the text read from its reference crop when it was registered ("" when none)
    label: str = ""


@dataclass
class Cluster:
    id: str
    name: str
    description: str
    selections: int = 0
    skill_ids: list[str] = field(default_factory=list)


@dataclass
class PruneCandidate:
    skill_id: str
    name: str
    executions: int
    fitness: float
    ucb: float


@dataclass
class GraphStats:
    """The columns of the papers' Table 2."""

    library_size: int  # active + suspended skills
    skills_augmented: int  # every skill ever created
    skills_pruned: int
    nodes: int
    skill_edges: int
    similarity_edges: int
    objects: int = 0
    clusters: int = 0

    def as_row(self) -> dict[str, int]:
        return dict(self.__dict__)
