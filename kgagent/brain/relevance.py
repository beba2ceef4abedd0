"""Which clusters and skills a prompt offers, so that prompts stay bounded as the library grows.

Why: offering every cluster with every member grows without limit (about 8k tokens
at 1,000 skills in 40 clusters) and a model chooses worse from a long list. The
relevant clusters are the nearest by the state encoder's features, the same signal
the offline brain uses: a cluster's score is the highest cosine between a feature
(the current screen; a new skill's mean source state) and the states where the
cluster's skills were used. The top ``k`` are offered, nearest first, and lines are
added only while the listed text stays under a character cap. Clusters with no
known states come after those with, by id.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgagent.brain.base import ClusterView, SkillView

_EPS = 1e-9


def unit(v: np.ndarray | None) -> np.ndarray | None:
    if v is None:
        return None
    a = np.asarray(v, dtype=np.float64).ravel()
    n = float(np.linalg.norm(a))
    if a.size == 0 or not np.isfinite(n) or n < _EPS:
        return None
    return a / n


def centre(features: np.ndarray | None) -> np.ndarray | None:
    """The normalised mean direction of a (k, dim) feature array (or one feature)."""
    if features is None:
        return None
    a = np.asarray(features, dtype=np.float64)
    if a.ndim == 1:
        return unit(a)
    if a.ndim != 2 or a.shape[0] == 0:
        return None
    norms = np.linalg.norm(a, axis=1)
    keep = np.isfinite(norms) & (norms > _EPS)
    if not keep.any():
        return None
    return unit((a[keep] / norms[keep, None]).mean(axis=0))


def closeness(feature: np.ndarray | None, cluster: ClusterView) -> float | None:
    """Highest cosine between ``feature`` and the cluster's states; ``None`` if unknown."""
    f = unit(feature)
    if f is None or cluster.state_features is None:
        return None
    rows = np.asarray(cluster.state_features, dtype=np.float64)
    if rows.ndim == 1:
        rows = rows[None, :]
    if rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[1] != f.size:
        return None
    norms = np.linalg.norm(rows, axis=1)
    keep = np.isfinite(norms) & (norms > _EPS)
    if not keep.any():
        return None
    return round(float(np.max((rows[keep] / norms[keep, None]) @ f)), 6)


def rank_clusters(
    features: Sequence[np.ndarray | None], clusters: list[ClusterView]
) -> list[ClusterView]:
    """Clusters by their best closeness to any of ``features``, nearest first; ties by id."""
    scored = []
    for c in clusters:
        scores = [s for f in features if (s := closeness(f, c)) is not None]
        scored.append((max(scores) if scores else None, c))
    known = sorted((t for t in scored if t[0] is not None), key=lambda t: (-t[0], t[1].id))
    unknown = sorted((t for t in scored if t[0] is None), key=lambda t: t[1].id)
    return [c for _, c in known + unknown]


def within(lines: list[str], k: int, max_chars: int) -> list[str]:
    """The first lines, at most ``k`` of them and ``max_chars`` characters in all (≥ 1 line)."""
    out: list[str] = []
    total = 0
    for line in lines[: max(0, k)]:
        if out and total + len(line) + 1 > max_chars:
            break
        out.append(line)
        total += len(line) + 1
    return out


def skill_batches(skills: list[SkillView], size: int, max_batches: int) -> list[list[SkillView]]:
    """Consecutive batches of at most ``size`` skills, at most ``max_batches`` of them."""
    size = max(1, size)
    batches = [skills[i : i + size] for i in range(0, len(skills), size)]
    return batches[: max(1, max_batches)]


def batch_size(configured: int, max_output_tokens: int | None, per_assignment: int = 70) -> int:
    """Skills per cluster_skills request so that the answer fits ``max_output_tokens``.

    One assignment is about 40-70 tokens of JSON (ids, a short name and description).
    """
    if max_output_tokens is None:
        return max(1, configured)
    return max(1, min(configured, (max_output_tokens - 30) // per_assignment))
