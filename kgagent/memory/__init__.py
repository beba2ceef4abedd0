"""The agent's persistent memory (SA-KG + procedural memory) on Kùzu/LadybugDB + LanceDB."""

from kgagent.memory.store import EncoderSpec, Memory, skill_edge_weight
from kgagent.records import (
    Cluster,
    GraphStats,
    HQCandidate,
    PruneCandidate,
    Skill,
    SkillEdge,
    StateHit,
    UIObject,
)

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
