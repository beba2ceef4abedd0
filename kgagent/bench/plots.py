"""The plots of a grid (matplotlib, no display needed), each as PNG and SVG.

Per experiment, environment and judge, on the grid's first metric:

* ``curves``: the learning curve, step by step, the mean over seeds and series of
  each method; rounds follow one another on the step axis (a dotted line where a
  round resumes the memory), so the curve shows what a resumed memory starts from;
* ``rounds`` (experiments with more than one round): the mean per round with its
  standard error, per method;
* ``bars``: per method (and round), the mean with its standard error, and the
  IQM with its bootstrap confidence interval as a black mark.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kgagent.bench.results import Results


def draw_plots(res: Results, folder: Path) -> dict[tuple, list[str]]:
    """Draw every plot into ``folder``; returns {(experiment, env, judge): [png names]}."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    metric = res.metrics[0] if res.metrics else "progression"
    out: dict[tuple, list[str]] = {}
    for exp in res.grid.experiments:
        for env in exp.envs:
            for judge in exp.judges:
                if not any(res.group(exp.name, env, judge, 0, m) for m in exp.methods):
                    continue
                stem = _safe(f"{exp.name}-{env}" + (f"-{judge}" if len(exp.judges) > 1 else ""))
                title = f"{env} ({exp.name}{', ' + judge if len(exp.judges) > 1 else ''})"
                names = []
                for kind, draw in (("curves", _curves), ("rounds", _rounds), ("bars", _bars)):
                    if kind == "rounds" and exp.rounds < 2:
                        continue
                    fig, ax = plt.subplots(figsize=(7, 4))
                    draw(ax, res, exp, env, judge, metric)
                    ax.set_title(f"{title}: {kind}")
                    ax.grid(True, alpha=0.3)
                    fig.tight_layout()
                    for ext in ("png", "svg"):
                        fig.savefig(folder / f"{stem}-{kind}.{ext}", dpi=110)
                    plt.close(fig)
                    names.append(f"{folder.name}/{stem}-{kind}.png")
                out[(exp.name, env, judge)] = names
    return out


def _curves(ax: Any, res: Results, exp: Any, env: str, judge: str, metric: str) -> None:
    import numpy as np

    for m in exp.methods:
        xs: list[int] = []
        ys: list[float] = []
        offset = 0
        for rnd in range(exp.rounds):
            curves = [
                res.curves.get((exp.name, env, judge, m, r["seed"], r["series"], rnd)) or []
                for r in res.group(exp.name, env, judge, rnd, m)
            ]
            curves = [c for c in curves if c]
            if not curves:
                continue
            n = min(len(c) for c in curves)
            mean = np.mean([c[:n] for c in curves], axis=0)
            xs += list(range(offset + 1, offset + n + 1))
            ys += [float(v) for v in mean]
            offset += exp.steps
        if xs:
            ax.plot(xs, ys, label=m)
    for rnd in range(1, exp.rounds):
        ax.axvline(rnd * exp.steps + 0.5, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("step" + (" (rounds in turn)" if exp.rounds > 1 else ""))
    ax.set_ylabel("progression (ground truth), mean over seeds")
    ax.legend(fontsize="small")


def _rounds(ax: Any, res: Results, exp: Any, env: str, judge: str, metric: str) -> None:
    for m in exp.methods:
        pts = [res.stat(exp.name, env, judge, r, m, metric) for r in range(exp.rounds)]
        xs = [r for r, s in enumerate(pts) if s]
        ys = [s["mean"] for s in pts if s]
        es = [s["se"] or 0.0 for s in pts if s]
        if xs:
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=m)
    ax.set_xticks(range(exp.rounds))
    ax.set_xlabel("round (each resumes the memory of the one before)")
    ax.set_ylabel(f"{metric}, mean ± SE")
    ax.legend(fontsize="small")


def _bars(ax: Any, res: Results, exp: Any, env: str, judge: str, metric: str) -> None:
    width = 0.8 / max(1, exp.rounds)
    for rnd in range(exp.rounds):
        xs, ys, es, iq, lo, hi = [], [], [], [], [], []
        for i, m in enumerate(exp.methods):
            s = res.stat(exp.name, env, judge, rnd, m, metric)
            if not s:
                continue
            x = i + (rnd - (exp.rounds - 1) / 2) * width
            xs.append(x)
            ys.append(s["mean"])
            es.append(s["se"] or 0.0)
            iq.append(s["iqm"])
            lo.append(s["iqm"] - s["iqm_lo"])
            hi.append(s["iqm_hi"] - s["iqm"])
        label = f"round {rnd}" if exp.rounds > 1 else "mean ± SE"
        ax.bar(xs, ys, width=width * 0.9, yerr=es, capsize=3, label=label, alpha=0.8)
        shifted = [x + width * 0.25 for x in xs]  # beside the SE bar, not over it
        ax.errorbar(shifted, iq, yerr=[lo, hi], fmt="D", color="black", markersize=3, capsize=2)
    ax.plot([], [], "D", color="black", markersize=3, label="IQM, bootstrap CI")
    ax.set_xticks(range(len(exp.methods)))
    ax.set_xticklabels(exp.methods)
    ax.set_ylabel(metric)
    ax.legend(fontsize="small")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")
