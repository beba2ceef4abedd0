"""The agent's persistent memory (SA-KG + procedural memory) on Kùzu/LadybugDB + LanceDB."""

from kgagent.memory.models import (
    Cluster,
    GraphStats,
    HQCandidate,
    PruneCandidate,
    Skill,
    SkillEdge,
    StateHit,
    UIObject,
)
from kgagent.memory.store import EncoderSpec, Memory, skill_edge_weight

__all__ = [
    "Cluster",
    "EncoderSpec",
    "GraphStats",
    "HQCandidate",
    "Memory",
    "PruneCandidate",
    "Skill",
    "SkillEdge",
    "StateHit",
    "UIObject",
    "skill_edge_weight",
]
