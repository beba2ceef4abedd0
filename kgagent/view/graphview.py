"""The SA-KG as Cytoscape elements: which states and edges a view shows, and how they look.

The papers' Fig. 4 draws skill edges red and similarity links blue; this view does
the same: a skill edge is a directed red arrow whose width and shade follow its
Eq. 1 weight, labelled with its skill; a similarity edge is a dashed blue line
whose width follows the cosine of its two states. States are drawn as their
thumbnails.

Large graphs stay usable by four means: a neighbourhood (the states within ``hops``
edges of a chosen state), a cap on the states drawn (the most visited first), a bound on
the skill edges drawn (the strongest), and a bound on the similarity edges drawn (beyond
it, each state's strongest, and every one of the chosen state's), with a note saying
what was left out.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kgagent.view.source import Snapshot, is_blob_id

#: States drawn at most, unless the view asks for another cap.
DEFAULT_CAP = 300
#: Edge labels are drawn when at most this many skill edges are shown ("auto").
LABEL_LIMIT = 80
#: Similarity edges drawn at most before they are thinned. Where a program's screens all
#: look alike to the encoder, the states form a near-clique (a Crafter memory after four
#: rounds: 787 states, 304,507 similarity edges, 43,938 among the 300 states drawn), which
#: no browser lays out; three card-game rounds hold 239 (docs/view.md).
SIMILAR_LIMIT = 2000
#: Beyond the limit, the similarity edges of each drawn state that are kept (its strongest).
SIMILAR_PER_STATE = 3
#: Skill edges drawn at most (the strongest by Eq. 1 weight); as many as the similarity
#: edges, so that the elements of a drawing stay bounded whatever the memory's size.
SKILL_LIMIT = 2000

SKILL_LOW, SKILL_HIGH = "#f4a582", "#b2182b"  # Eq. 1 weight 0 -> 1 (ColorBrewer RdBu)
SIMILAR = "#2166ac"


@dataclass
class Filters:
    """What the graph page asks for; every field is optional."""

    run_edges: set[tuple[str, str, str]] | None = None  # (src, dst, skill) executed in a run
    run_states: set[str] | None = None
    cluster_skills: set[str] | None = None
    min_weight: float = 0.0
    similarity: bool = True
    hide_isolated: bool = False
    merge_parallel: bool = True  # one drawn edge per (src, dst), carrying every skill on it
    focus: str | None = None
    hops: int = 1
    cap: int = DEFAULT_CAP
    similar_limit: int = SIMILAR_LIMIT
    similar_per_state: int = SIMILAR_PER_STATE
    skill_limit: int = SKILL_LIMIT


@dataclass
class GraphView:
    """The elements to draw and a note on what was left out."""

    elements: list[dict[str, Any]]
    states: int  # states drawn
    skill_edges: int
    similar_edges: int
    states_total: int  # states in the memory
    notes: list[str] = field(default_factory=list)


def short_id(state_id: str) -> str:
    """``s-0000012-ab12…`` -> ``s12``: the sequence is unique within a memory and reads well."""
    parts = state_id.split("-")
    if len(parts) >= 2 and parts[1].isascii() and parts[1].isdigit() and len(parts[1]) <= 18:
        return f"{parts[0]}{int(parts[1])}"
    return state_id[:10]


def _label(name: str, limit: int = 26) -> str:
    name = " ".join(str(name).split())
    return name if len(name) <= limit else name[: limit - 1] + "…"


def select(snap: Snapshot, f: Filters) -> GraphView:
    """Apply the filters, the neighbourhood and the cap; build Cytoscape elements."""
    states = set(snap.states)
    total = len(states)
    skill_edges = [e for e in snap.skill_edges if float(e["weight"] or 0.0) >= f.min_weight]
    if f.run_edges is not None:
        skill_edges = [e for e in skill_edges if (e["src"], e["dst"], e["skill"]) in f.run_edges]
        states &= f.run_states or set()
    if f.cluster_skills is not None:
        skill_edges = [e for e in skill_edges if e["skill"] in f.cluster_skills]
        states &= {e["src"] for e in skill_edges} | {e["dst"] for e in skill_edges}
    skill_edges = [e for e in skill_edges if e["src"] in states and e["dst"] in states]
    similar = (
        [e for e in snap.similar_edges if e["src"] in states and e["dst"] in states]
        if f.similarity
        else []
    )
    notes: list[str] = []
    if f.hide_isolated:
        touched = {e["src"] for e in skill_edges} | {e["dst"] for e in skill_edges}
        touched |= {e["src"] for e in similar} | {e["dst"] for e in similar}
        states &= touched
    if f.focus:
        if f.focus in states:
            dist = _distances(f.focus, skill_edges + similar, f.hops)
            states = set(dist)
            notes.append(f"neighbourhood of {short_id(f.focus)}: states within {f.hops} edge(s)")
        else:
            notes.append(f"{short_id(f.focus)} is not among the filtered states; focus ignored")
    if len(states) > f.cap:
        keep = _most_visited(snap, states, f.cap, f.focus)
        notes.append(
            f"showing {len(keep):,} of {len(states):,} states (the most visited; raise the cap "
            "or choose a state to see its neighbourhood)"
        )
        states = keep
    skill_edges = [e for e in skill_edges if e["src"] in states and e["dst"] in states]
    if len(skill_edges) > f.skill_limit:
        n = len(skill_edges)
        rank = sorted(range(n), key=lambda i: (-float(skill_edges[i]["weight"] or 0.0), i))
        skill_edges = [skill_edges[i] for i in sorted(rank[: max(f.skill_limit, 0)])]
        notes.append(f"showing {len(skill_edges):,} of {n:,} skill edges (the strongest)")
    similar = [e for e in similar if e["src"] in states and e["dst"] in states]
    if len(similar) > f.similar_limit:
        n = len(similar)
        similar = _strongest_similar(similar, f.similar_per_state, f.focus, f.similar_limit)
        notes.append(
            f"showing {len(similar):,} of {n:,} similarity edges (each state's "
            f"{f.similar_per_state} strongest"
            + (f", and {short_id(f.focus)}'s strongest" if f.focus in states else "")
            + ")"
        )
    elements = [_node(snap, sid, sid == f.focus) for sid in sorted(states)]
    if f.merge_parallel:
        elements += _merged_edges(snap, skill_edges)
    else:
        elements += [_skill_edge(snap, e) for e in skill_edges]
    elements += [_similar_edge(e) for e in similar]
    return GraphView(elements, len(states), len(skill_edges), len(similar), total, notes)


def _distances(start: str, edges: list[dict[str, Any]], hops: int) -> dict[str, int]:
    """Breadth-first distances from ``start`` over edges taken both ways, up to ``hops``."""
    adj: dict[str, set[str]] = {}
    for e in edges:
        adj.setdefault(e["src"], set()).add(e["dst"])
        adj.setdefault(e["dst"], set()).add(e["src"])
    dist = {start: 0}
    todo = deque([start])
    while todo:
        v = todo.popleft()
        if dist[v] >= hops:
            continue
        for u in sorted(adj.get(v, ())):
            if u not in dist:
                dist[u] = dist[v] + 1
                todo.append(u)
    return dist


def _strongest_similar(
    edges: list[dict[str, Any]], per_state: int, focus: str | None, limit: int
) -> list[dict[str, Any]]:
    """Each state's ``per_state`` strongest similarity edges, and the chosen state's
    strongest up to ``limit``; in the order given."""
    by_state: dict[str, list[tuple[float, int]]] = {}
    for i, e in enumerate(edges):
        w = float(e["weight"] or 0.0)
        by_state.setdefault(e["src"], []).append((-w, i))
        by_state.setdefault(e["dst"], []).append((-w, i))
    keep: set[int] = set()
    for sid, ranked in by_state.items():
        ranked.sort()
        n = max(limit, per_state) if sid == focus else max(per_state, 0)
        keep.update(i for _, i in ranked[:n])
    return [e for i, e in enumerate(edges) if i in keep]


def _most_visited(snap: Snapshot, states: set[str], cap: int, focus: str | None) -> set[str]:
    ranked = sorted(states, key=lambda s: (s != focus, -int(snap.states[s].get("visits") or 0), s))
    return set(ranked[: max(cap, 1)])


def _node(snap: Snapshot, sid: str, focus: bool) -> dict[str, Any]:
    row = snap.states[sid]
    thumb = row.get("thumbnail") or ""
    classes = ["state"]
    if focus:
        classes.append("focus")
    if not is_blob_id(thumb):
        classes.append("nothumb")
    return {
        "data": {
            "id": sid,
            "label": f"{short_id(sid)} ×{int(row.get('visits') or 0)}",
            "visits": int(row.get("visits") or 0),
            "thumb": f"/blob/{thumb}.png" if is_blob_id(thumb) else "",
        },
        "classes": " ".join(classes),
    }


def _skill_edge(snap: Snapshot, e: dict[str, Any]) -> dict[str, Any]:
    skill = snap.skills.get(e["skill"], {})
    w = float(e["weight"] or 0.0)
    return {
        "data": {
            "id": f"k|{e['src']}|{e['dst']}|{e['skill']}",
            "source": e["src"],
            "target": e["dst"],
            "skill": e["skill"],
            "weight": round(w, 4),
            "label": f"{_label(skill.get('name', e['skill']))} · {w:.2f}",
        },
        "classes": "skill loop" if e["src"] == e["dst"] else "skill",
    }


def _merged_edges(snap: Snapshot, edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One arrow per state pair: the best skill's weight and name, and how many more share it."""
    pairs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in edges:
        pairs.setdefault((e["src"], e["dst"]), []).append(e)
    out = []
    for (src, dst), group in sorted(pairs.items()):
        group.sort(key=lambda e: (-float(e["weight"] or 0.0), e["skill"]))
        best = _skill_edge(snap, group[0])
        if len(group) > 1:
            best["data"]["label"] += f" (+{len(group) - 1})"
        best["data"]["id"] = f"k|{src}|{dst}"
        best["data"]["skills"] = [e["skill"] for e in group]
        out.append(best)
    return out


def _similar_edge(e: dict[str, Any]) -> dict[str, Any]:
    return {
        "data": {
            "id": f"s|{e['src']}|{e['dst']}",
            "source": e["src"],
            "target": e["dst"],
            "weight": round(float(e["weight"] or 0.0), 4),
        },
        "classes": "similar",
    }


def stylesheet(labels: bool, theta_simi: float = 0.8) -> list[dict[str, Any]]:
    """Cytoscape styles: thumbnails for states, Eq. 1 weights for skill edges, dashes for cosines."""
    lo = max(min(theta_simi, 0.99), 0.0)
    return [
        {
            "selector": "node",
            "style": {
                "shape": "round-rectangle",
                "width": 84,
                "height": 48,
                "background-color": "#e9ecef",
                "background-image": "data(thumb)",
                "background-fit": "contain",  # the whole screen: a tall window is not cut
                "background-image-crossorigin": "null",
                "border-width": 1.5,
                "border-color": "#343a40",
                "label": "data(label)",
                "font-size": 10,
                "font-family": "Helvetica, Arial, sans-serif",
                "color": "#212529",
                "text-valign": "bottom",
                "text-margin-y": 3,
                "text-background-color": "#ffffff",
                "text-background-opacity": 0.85,
                "text-background-padding": 1,
            },
        },
        {"selector": "node.nothumb", "style": {"background-image": "none"}},
        {
            "selector": "node.focus",
            "style": {"border-width": 4, "border-color": "#6a3d9a"},
        },
        {
            "selector": "node:selected",
            "style": {"border-width": 4, "border-color": "#ff7f00"},
        },
        {
            "selector": "edge.skill",
            "style": {
                "curve-style": "bezier",
                "target-arrow-shape": "triangle",
                "arrow-scale": 0.9,
                "width": "mapData(weight, 0, 1, 0.8, 5)",
                "line-color": f"mapData(weight, 0, 1, {SKILL_LOW}, {SKILL_HIGH})",
                "target-arrow-color": f"mapData(weight, 0, 1, {SKILL_LOW}, {SKILL_HIGH})",
                "opacity": 0.9,
                "label": "data(label)" if labels else "",
                "font-size": 8,
                "font-family": "Helvetica, Arial, sans-serif",
                "color": "#67001f",
                "text-rotation": "autorotate",
                "text-background-color": "#ffffff",
                "text-background-opacity": 0.8,
                "text-background-padding": 1,
            },
        },
        {
            "selector": "edge.loop",
            "style": {
                "loop-direction": "-45deg",
                "loop-sweep": "-60deg",
                "control-point-step-size": 40,
            },
        },
        {
            "selector": "edge.similar",
            "style": {
                "curve-style": "bezier",
                "line-style": "dashed",
                "line-dash-pattern": [5, 4],
                "line-color": SIMILAR,
                "width": f"mapData(weight, {lo}, 1, 0.6, 2.4)",
                "opacity": 0.65,
            },
        },
        {
            "selector": "edge:selected",
            "style": {"line-color": "#ff7f00", "target-arrow-color": "#ff7f00", "opacity": 1},
        },
    ]
