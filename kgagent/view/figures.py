"""Plotly figures of the live and rounds pages, and the numbers behind each as CSV.

One look for all figures (white background, thin axes, a colour-blind-safe
palette, Helvetica), so a figure downloaded as SVG goes into a paper as it is.
Every figure is built from plain lists, so its CSV holds exactly what it plots.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kgagent.rounds import Round
from kgagent.textsafe import CsvWriter

#: Okabe–Ito: distinguishable in colour-blindness and in greyscale print.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
FONT = dict(family="Helvetica, Arial, sans-serif", size=13, color="#222")
PATH_COLOURS = {
    "hq": "#0072B2",
    "cluster": "#009E73",
    "augment": "#D55E00",
    "random": "#CC79A7",
    "idle": "#999999",
}
REWARDS = ("r_progress", "r_semantic", "r_state", "r_novel")
REWARD_NAMES = {
    "r_progress": "R_progress",
    "r_semantic": "R_semantic",
    "r_state": "R_state",
    "r_novel": "R_novel",
    "r_total": "R_total",
}


def _style(fig: go.Figure, title: str, height: int = 360) -> go.Figure:
    fig.update_layout(
        template="simple_white",
        font=FONT,
        title=dict(text=title, x=0.01, xanchor="left", font=dict(size=15)),
        height=height,
        margin=dict(l=60, r=20, t=50, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0),
        colorway=list(PALETTE),
        hovermode="x unified",
    )
    fig.update_xaxes(showgrid=True, gridcolor="#eee", ticks="outside")
    fig.update_yaxes(showgrid=True, gridcolor="#eee", ticks="outside")
    return fig


def rolling_mean(values: Sequence[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


# ---------------------------------------------------------------- live
def live_figure(series: dict[str, list[float]], window: int | None = None) -> go.Figure:
    """R_total per step (and its 10-step mean), ERR so far, and library size."""
    n = len(series["step"])
    lo = max(0, n - window) if window else 0
    s = {k: v[lo:] for k, v in series.items()}
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=(
            "R_total per step",
            "ERR (valid transitions / executions, so far)",
            "library size",
        ),
    )
    fig.add_trace(
        go.Scatter(
            x=s["step"],
            y=s["r_total"],
            mode="markers",
            name="R_total",
            marker=dict(size=5, color=PALETTE[0], opacity=0.6),
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=s["step"],
            y=rolling_mean(series["r_total"], 10)[lo:],
            mode="lines",
            name="10-step mean",
            line=dict(color=PALETTE[1], width=2),
        ),
        1,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=s["step"], y=s["err"], mode="lines", name="ERR", line=dict(color=PALETTE[2], width=2)
        ),
        2,
        1,
    )
    fig.add_trace(
        go.Scatter(
            x=s["step"],
            y=s["library_size"],
            mode="lines",
            name="library size",
            line=dict(color=PALETTE[3], width=2, shape="hv"),
        ),
        3,
        1,
    )
    _style(fig, "", height=520)
    fig.update_layout(margin=dict(l=60, r=20, t=40, b=45), showlegend=False)
    fig.update_yaxes(range=[0, 1.02], row=2, col=1)
    fig.update_xaxes(title_text="step", row=3, col=1)
    fig.update_annotations(font=dict(size=13))
    return fig


def reward_figure(step: dict[str, Any], title: str = "reward terms (Eq. 9)") -> go.Figure:
    """An execution's reward terms (Eq. 9: R_total is their sum)."""
    names = [REWARD_NAMES[k] for k in (*REWARDS, "r_total")]
    vals = [float(step.get(k, 0.0) or 0.0) for k in (*REWARDS, "r_total")]
    colours = [PALETTE[5]] * 4 + [PALETTE[0]]
    fig = go.Figure(
        go.Bar(
            x=vals,
            y=names,
            orientation="h",
            marker_color=colours,
            text=[f"{v:+.2f}" for v in vals],
            textposition="outside",
            cliponaxis=False,
        )
    )
    _style(fig, title, height=240)
    fig.update_layout(margin=dict(l=100, r=40, t=40, b=30), hovermode=False)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    return fig


# ---------------------------------------------------------------- rounds
def _labels(rounds: Sequence[Round]) -> list[str]:
    return [f"Round {r.round}" for r in rounds]


def library_figure(rounds: Sequence[Round]) -> go.Figure:
    """Skills augmented and pruned per round (bars), library size at each round's end (line)."""
    x = _labels(rounds)
    fig = go.Figure()
    fig.add_bar(
        x=x,
        y=[r.skills_augmented for r in rounds],
        name="skills augmented",
        marker_color=PALETTE[0],
    )
    fig.add_bar(
        x=x, y=[r.skills_pruned for r in rounds], name="skills pruned", marker_color=PALETTE[1]
    )
    fig.add_scatter(
        x=x,
        y=[r.library_size for r in rounds],
        name="library size (end of round)",
        mode="lines+markers",
        line=dict(color="#222", width=2),
        marker=dict(size=8),
    )
    _style(fig, "Skill library per round")
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="skills", rangemode="tozero")
    return fig


def graph_figure(rounds: Sequence[Round]) -> go.Figure:
    """Nodes, skill edges and similarity edges at each round's end."""
    x = _labels(rounds)
    fig = go.Figure()
    for (name, key), colour in zip(
        (
            ("nodes", "nodes"),
            ("skill edges", "skill_edges"),
            ("similarity edges", "similarity_edges"),
        ),
        (PALETTE[0], PALETTE[1], PALETTE[2]),
    ):
        fig.add_scatter(
            x=x,
            y=[getattr(r, key) for r in rounds],
            name=name,
            mode="lines+markers",
            line=dict(color=colour, width=2),
            marker=dict(size=8),
        )
    _style(fig, "SA-KG size at the end of each round")
    fig.update_yaxes(title_text="count", rangemode="tozero")
    return fig


def outcome_figure(rounds: Sequence[Round]) -> go.Figure:
    """Progression and ERR per round."""
    x = _labels(rounds)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("progression (ground truth)", "ERR"))
    fig.add_bar(
        x=x,
        y=[r.progression for r in rounds],
        marker_color=PALETTE[0],
        name="progression",
        row=1,
        col=1,
    )
    fig.add_bar(x=x, y=[r.err for r in rounds], marker_color=PALETTE[2], name="ERR", row=1, col=2)
    _style(fig, "Outcome per round")
    fig.update_layout(showlegend=False, hovermode="closest")
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    fig.update_annotations(font=dict(size=13))
    return fig


def curves_figure(rounds: Sequence[Round], series: Sequence[dict[str, list[float]]]) -> go.Figure:
    """Learning curves: progression along each round's steps, one line per round."""
    fig = go.Figure()
    for r, s, colour in zip(rounds, series, _ramp(len(rounds))):
        fig.add_scatter(
            x=list(range(1, len(s["progression"]) + 1)),
            y=s["progression"],
            name=f"Round {r.round}",
            mode="lines",
            line=dict(color=colour, width=2, shape="hv"),
        )
    _style(fig, "Learning curves: progression within each round")
    fig.update_xaxes(title_text="step of the round")
    fig.update_yaxes(title_text="progression", rangemode="tozero")
    return fig


def growth_figure(rounds: Sequence[Round], series: Sequence[dict[str, list[float]]]) -> go.Figure:
    """Library size over all steps of all rounds, with the round boundaries marked."""
    fig = go.Figure()
    offset = 0
    xs: list[int] = []
    ys: list[float] = []
    for r, s in zip(rounds, series):
        xs += [offset + i for i in range(1, len(s["library_size"]) + 1)]
        ys += s["library_size"]
        if offset:
            fig.add_vline(x=offset + 0.5, line=dict(color="#999", dash="dot", width=1))
        fig.add_annotation(
            x=offset + max(len(s["library_size"]), 1) / 2,
            y=1.0,
            yref="paper",
            showarrow=False,
            text=f"R{r.round}",
            font=dict(size=11, color="#666"),
        )
        offset += len(s["library_size"])
    fig.add_scatter(
        x=xs,
        y=ys,
        mode="lines",
        name="library size",
        line=dict(color=PALETTE[3], width=2, shape="hv"),
    )
    _style(fig, "Library size over steps (all rounds)")
    fig.update_xaxes(title_text="step (cumulative over rounds)")
    fig.update_yaxes(title_text="skills", rangemode="tozero")
    fig.update_layout(showlegend=False)
    return fig


def _ramp(n: int) -> list[str]:
    """Light to dark blue: later rounds darker, so the order reads without a legend."""
    if n <= 1:
        return [PALETTE[0]]
    lo, hi = (158, 202, 225), (8, 48, 107)
    return [
        "#{:02x}{:02x}{:02x}".format(
            *tuple(round(a + (b - a) * i / (n - 1)) for a, b in zip(lo, hi))
        )
        for i in range(n)
    ]


#: Rounds-page figures: name -> (title for buttons, builder needing series?).
ROUND_FIGURES = ("library", "graph", "outcome", "curves", "growth")


def round_figure(name: str, rounds: Sequence[Round], series: Sequence[dict]) -> go.Figure:
    if name == "library":
        return library_figure(rounds)
    if name == "graph":
        return graph_figure(rounds)
    if name == "outcome":
        return outcome_figure(rounds)
    if name == "curves":
        return curves_figure(rounds, series)
    if name == "growth":
        return growth_figure(rounds, series)
    raise KeyError(name)


def figure_csv(name: str, rounds: Sequence[Round], series: Sequence[dict]) -> str:
    """The numbers a rounds figure plots, as CSV."""
    buf = io.StringIO()
    w = CsvWriter(buf, spreadsheet=True)  # a download is opened in a spreadsheet
    if name in ("library", "graph", "outcome"):
        cols = {
            "library": ("library_size", "skills_augmented", "skills_pruned"),
            "graph": ("nodes", "skill_edges", "similarity_edges"),
            "outcome": ("progression", "score", "err"),
        }[name]
        w.writerow(["round", "log", *cols])
        for r in rounds:
            w.writerow(
                [r.round, r.log, *("" if getattr(r, c) is None else getattr(r, c) for c in cols)]
            )
    elif name in ("curves", "growth"):
        w.writerow(
            ["round", "log", "step", "progression", "score", "r_total", "err", "library_size"]
        )
        for r, s in zip(rounds, series):
            for i in range(len(s["step"])):
                w.writerow(
                    [
                        r.round,
                        r.log,
                        s["step"][i],
                        s["progression"][i],
                        s["score"][i],
                        s["r_total"][i],
                        s["err"][i],
                        int(s["library_size"][i]),
                    ]
                )
    else:
        raise KeyError(name)
    return buf.getvalue()
