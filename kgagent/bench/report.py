"""The Markdown report of a grid: the tables docs/benchmarks.md takes, generated, not typed.

Per experiment and environment (and judge, when a grid has several): the grid's
first metric per seed (per series, with several) with mean ± sd, mean ± SE and the
IQM with its bootstrap interval, beside ERR and the graph's size; the paired
comparisons with the reference method; for rounds, each series' rounds and the
paired change from round 0 to the last; then every figure's mean ± SE. A paired
comparison of the first metric carries its verdict (:func:`kgagent.bench.stats.verdict`:
"not shown" below ten pairs or inside the noise), so a table never reads as a claim
its runs cannot carry. The header names the command,
date, machine and package versions, which a figure in the docs must carry.

Each of these is a named section (:data:`SECTIONS`, and ``header``) that
:func:`render_section` renders alone: a block of a doc takes one
(:mod:`kgagent.bench.docs`), so the docs' tables are the report's, not copies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kgagent.bench.figures import achievement_names, crafter_score
from kgagent.bench.results import Results
from kgagent.bench.spec_types import Experiment
from kgagent.bench.stats import ALPHA, MIN_PAIRS, Paired, verdict

#: Headings for figures.
LABELS = {
    "progression": "progression",
    "score": "score",
    "err": "ERR",
    "cost_per_100_steps": "$/100 steps",
    "library_size": "library",
    "skills_augmented": "augmented",
    "skills_pruned": "pruned",
    "round_skills_augmented": "augmented this round",
    "round_skills_pruned": "pruned this round",
    "nodes": "nodes",
    "skill_edges": "skill edges",
    "similarity_edges": "sim edges",
    "actions": "actions",
    "achievements": "achievements",
    "unlocks_per_1000": "unlocks / 1,000 steps",
    "episode_count": "episodes",
    "world_steps": "world steps",
}
#: Figures shown beside the first metric in the methods table (mean over seeds).
SIDE = ("err", "nodes", "skill_edges")
#: Figures whose comparisons get a verdict when a grid leads with them, and which way is
#: better; the others (graph sizes, counts) have no target to meet.
BETTER = {
    "progression": "higher",
    "score": "higher",
    "err": "higher",
    "achievements": "higher",
    "unlocks_per_1000": "higher",
    "cost_per_100_steps": "lower",
}


@dataclass(frozen=True)
class Where:
    """One place in a grid's report: an experiment, an environment, a judge and a round."""

    exp: Experiment
    env: str
    judge: str
    rnd: int = 0


def render_report(res: Results, images: dict[tuple, list[str]]) -> str:
    g = res.grid
    lines = [f"# Benchmark grid: {g.name}", ""]
    if g.description:
        lines += [g.description, ""]
    lines += _header(res)
    for exp in g.experiments:
        lines += _experiment(res, exp, images)
    lines += _failed(res)
    lines += _merged(res)
    return "\n".join(lines).rstrip() + "\n"


def render_section(res: Results, name: str, at: Where | None = None) -> str:
    """One section of the report by name (:data:`SECTIONS`), as the report renders it.

    ``header`` is the grid's; the others are of one place ``at``. Empty when the
    results hold nothing for it. Docs take their tables from here (:mod:`kgagent.bench.docs`).
    """
    if name == "header":
        lines = _header(res)
    elif name not in SECTIONS:
        raise ValueError(f"unknown section {name!r}; known: header, {', '.join(SECTIONS)}")
    elif at is None:
        raise ValueError(f"the {name} section is of one experiment, environment and judge")
    else:
        lines = SECTIONS[name](res, at)
    return "\n".join(lines).strip("\n") + "\n" if any(lines) else ""


def _header(res: Results) -> list[str]:
    """The command, date, machine and versions, which a figure in the docs must carry."""
    g = res.grid
    meta = res.meta
    done = sum(c["status"] == "done" for c in res.cells)
    failed = sum(c["status"] == "failed" for c in res.cells)
    stopped = sum(c["status"] == "interrupted" for c in res.cells)
    lines = [
        f"- command: `{meta.get('command', 'kgagent bench ' + str(g.path))}`",
        f"- date: {meta.get('date', '-')}; wall {meta.get('wall_min', 0):.1f} min"
        + (f"; executor: {meta['executor']}" if meta.get("executor") else ""),
        f"- cells: {len(res.cells)} ({done} finished, of which {meta.get('ran_before', 0)} "
        f"before this command; {failed} failed" + (f", {stopped} interrupted)" if stopped else ")"),
        f"- machine: {meta.get('machine', '-')}",
        f"- versions: {meta.get('versions', '-')}",
        "- files: runs.csv (every run), stats.csv (mean, sd, SE, IQM and its "
        f"{g.confidence:.0%} bootstrap CI over {g.bootstrap} resamples), paired.csv, summary.json",
    ]
    if meta.get("plots"):
        lines.append(f"- plots: {meta['plots']}")
    return lines + [""]


def _failed(res: Results) -> list[str]:
    failed = [c for c in res.cells if c["status"] == "failed"]
    if not failed:
        return []
    lines = ["## Failed cells", "", "| cell | error |", "|---|---|"]
    lines += [f"| {c['key']} | {_md(c.get('error', ''))} |" for c in failed]
    lines += ["", "Tracebacks: `cells/<cell>/error.txt`. Run the grid again to retry them."]
    return lines + [""]


def _merged(res: Results) -> list[str]:
    if not res.merges:
        return []
    lines = ["## Merged memories", "", "| group | memory | sources | states | skills |"]
    lines += ["|---|---|---|---|---|"]
    for m in res.merges:
        lines.append(
            f"| {m['group']} | {m['memory']} | {m['sources']} | {m.get('states', '-')} "
            f"| {m.get('library_size', '-')} |"
        )
    return lines + [""]


def _lead(res: Results) -> str:
    """The grid's first metric: the one its tables lead with."""
    return res.metrics[0] if res.metrics else "progression"


def _experiment(res: Results, exp: Experiment, images: dict[tuple, list[str]]) -> list[str]:
    shape = (
        f"{len(exp.envs)} environment(s) × {len(exp.methods)} method(s) × {len(exp.judges)} "
        f"judge(s) × {len(exp.seeds)} seed(s) × {exp.series} series × {exp.rounds} round(s) × "
        f"{exp.steps} steps"
    )
    seeds = ", ".join(map(str, exp.seeds))
    lines = [
        f"## Experiment `{exp.name}`",
        "",
        f"{shape}; seeds {seeds}; judges {', '.join(exp.judges)}; reference {exp.reference}. "
        f"Round r of series s of seed k plays run.seed k + {exp.series_stride}·s + "
        f"{exp.round_stride}·r.",
        "",
    ]
    for env in exp.envs:
        for judge in exp.judges:
            if not any(res.group(exp.name, env, judge, 0, m) for m in exp.methods):
                continue
            head = env + (f", judge {judge}" if len(exp.judges) > 1 else "")
            for rnd in range(exp.rounds):
                suffix = f", round {rnd}" if exp.rounds > 1 else ""
                lines += [f"### {head}{suffix}", ""]
                for name in ROUND_SECTIONS:
                    lines += SECTIONS[name](res, Where(exp, env, judge, rnd))
            if exp.rounds > 1:
                lines += [f"### {head}: rounds resuming one memory", ""]
                lines += _rounds_table(res, Where(exp, env, judge))
            for name in images.get((exp.name, env, judge), []):
                lines.append(f"![{name}]({name})")
            lines.append("")
    return lines


def _methods_table(res: Results, at: Where) -> list[str]:
    exp, env, judge, rnd = at.exp, at.env, at.judge, at.rnd
    metric = _lead(res)
    side = [m for m in SIDE if m in res.metrics and m != metric]
    head = [
        "method",
        f"{LABELS.get(metric, metric)} {_per(exp)}",
        "mean ± sd",
        "mean ± SE",
        f"IQM [{res.grid.confidence:.0%} CI]",
        *(LABELS.get(m, m) for m in side),
    ]
    lines = [_row(head), _rule(len(head))]
    for m in exp.methods:
        rows = res.group(exp.name, env, judge, rnd, m)
        s = res.stat(exp.name, env, judge, rnd, m, metric)
        if not rows or s is None:
            continue
        per = _per_run(exp, rows, metric)
        sd = f"{s['mean']:.2f} ± {s['sd']:.2f}" if s["sd"] is not None else f"{s['mean']:.2f}"
        se = f"{s['mean']:.2f} ± {s['se']:.2f}" if s["se"] is not None else f"{s['mean']:.2f}"
        iqm = f"{s['iqm']:.2f} [{s['iqm_lo']:.2f}, {s['iqm_hi']:.2f}]"
        cells = []
        for f in side:
            t = res.stat(exp.name, env, judge, rnd, m, f)
            cells.append(
                "-" if t is None else (f"{t['mean']:.3f}" if f == "err" else f"{t['mean']:.1f}")
            )
        lines.append(_row([m, per, sd, se, iqm, *cells]))
    return lines + [""] if len(lines) > 2 else []


def _paired_table(res: Results, at: Where) -> list[str]:
    where = (at.exp.name, at.env, at.judge, at.rnd, "methods")
    rows = [
        p
        for p in res.paired
        if (p["experiment"], p["env"], p["judge"], p["round"], p["kind"]) == where
    ]
    if not rows:
        return _no_reference(res, at)
    shown = [m for m in res.metrics[:3] if any(p["metric"] == m for p in rows)]
    judged = _judged(res)
    what = "difference ± SE, t with its two-sided p, pairs up / even / down"
    head = ["comparison", *(LABELS.get(m, m) for m in shown)]
    if judged:
        what += f"; {_VERDICT_RULE}"
        head.append(_verdict_head(judged))
    lines = [f"Paired by seed and series ({what}):", "", _row(head), _rule(len(head))]
    for label in dict.fromkeys(p["comparison"] for p in rows):
        mine = [p for p in rows if p["comparison"] == label]
        cells = [label]
        for m in shown:
            hit = [p for p in mine if p["metric"] == m]
            cells.append(hit[0]["text"] if hit else "-")
        if judged:
            cells.append(_verdict(judged, mine))
        lines.append(_row(cells))
    few = sorted({p["n"] for p in rows if p["metric"] in shown and p["n"] < MIN_PAIRS})
    if few:  # a small p of any column is no claim either: the verdict's rule holds for all
        ns = ", ".join(map(str, few))
        lines += [
            "",
            f"Fewer than {MIN_PAIRS} pairs (n = {ns}): no difference in this table is shown, "
            "in any column, whatever its p.",
        ]
    return lines + [""]


def _no_reference(res: Results, at: Where) -> list[str]:
    """Where an experiment's methods ran but its reference has no runs here, one line that
    says why there is no paired table (a grid run with ``--only``, or its reference failed)."""
    exp, env, judge, rnd = at.exp, at.env, at.judge, at.rnd
    if res.group(exp.name, env, judge, rnd, exp.reference):
        return []
    if not any(res.group(exp.name, env, judge, rnd, m) for m in exp.methods):
        return []
    return [
        f"No paired comparison: the reference `{exp.reference}` has no finished runs in this "
        "folder (run its cells: the grid without `--only`, or again where they failed).",
        "",
    ]


#: How the report's verdicts are reached (:func:`kgagent.bench.stats.verdict`).
_VERDICT_RULE = (
    f"verdict: met with ≥ {MIN_PAIRS} pairs and p < {ALPHA:g} in the better direction, "
    "missed in the other, otherwise not shown"
)


def _judged(res: Results) -> str | None:
    """The figure whose comparisons get a verdict: the grid's first, where it has a better way."""
    metric = _lead(res)
    return metric if metric in BETTER else None


def _verdict_head(metric: str) -> str:
    return f"verdict ({BETTER[metric]} {LABELS.get(metric, metric)})"


def _verdict(metric: str, rows: list[dict]) -> str:
    """The verdict on one comparison of ``metric``: ``not shown (n = 2 < 10)``; ``-`` without one."""
    hit = [p for p in rows if p["metric"] == metric]
    if not hit:
        return "-"
    return str(verdict(Paired.from_row(hit[0]), lower=BETTER[metric] == "lower"))


def _all_figures(res: Results, at: Where) -> list[str]:
    exp, env, judge, rnd = at.exp, at.env, at.judge, at.rnd
    shown = list(res.metrics)
    lines = [
        "Every figure, mean ± SE:",
        "",
        _row(["method", *(LABELS.get(m, m) for m in shown)]),
        _rule(1 + len(shown)),
    ]
    for m in exp.methods:
        cells = []
        for f in shown:
            s = res.stat(exp.name, env, judge, rnd, m, f)
            if s is None:
                cells.append("-")
                continue
            d = 3 if f in ("err", "cost_per_100_steps") else 2
            cells.append(
                f"{s['mean']:.{d}f}" + (f" ± {s['se']:.{d}f}" if s["se"] is not None else "")
            )
        if any(c != "-" for c in cells):
            lines.append(_row([m, *cells]))
    return lines + [""] if len(lines) > 4 else []


def _crafter(res: Results, at: Where) -> list[str]:
    exp, env, judge, rnd = at.exp, at.env, at.judge, at.rnd
    names = achievement_names(env)
    if not names:
        return []
    lines = []
    for m in exp.methods:
        eps = [
            e
            for r in res.group(exp.name, env, judge, rnd, m)
            for e in res.episodes.get((exp.name, env, judge, m, r["seed"], r["series"], rnd), [])
        ]
        if eps:
            seen = sorted({a for e in eps for a in e})
            lines.append(
                f"- {m}: Crafter score {crafter_score(eps, names):.1f} % over {len(eps)} "
                f"episodes; achievements seen: {', '.join(seen) or '-'}"
            )
    if not lines:
        return []
    return [
        *lines,
        "",
        "Crafter score: S = exp(mean_i ln(1 + s_i)) − 1 over its 22 achievements, s_i the % of "
        "episodes that unlocked achievement i (Hafner 2021; published: random 1.6 %, human "
        "experts 50.5 %, over full episodes; here episodes end at the step budget).",
        "",
    ]


def _rounds_table(res: Results, at: Where) -> list[str]:
    exp, env, judge = at.exp, at.env, at.judge
    metric = _lead(res)
    if exp.rounds < 2:
        return []
    last = exp.rounds - 1
    rr = " / ".join(str(r) for r in range(exp.rounds))
    judged = _judged(res)
    head = [
        "method",
        f"{LABELS.get(metric, metric)}, rounds {rr}, {_per(exp)}",
        "mean per round",
        f"round {last} − round 0",
        *([_verdict_head(metric)] if judged else []),
    ]
    lines = [_row(head), _rule(len(head))]
    for m in exp.methods:
        by: dict[tuple, dict[int, Any]] = {}
        for rnd in range(exp.rounds):
            for r in res.group(exp.name, env, judge, rnd, m):
                by.setdefault((r["seed"], r["series"]), {})[rnd] = r.get(metric)
        if not by:
            continue
        per = " · ".join(
            "/".join(_num(v.get(rnd)) for rnd in range(exp.rounds)) for _, v in sorted(by.items())
        )
        means = [res.stat(exp.name, env, judge, rnd, m, metric) for rnd in range(exp.rounds)]
        mean = " / ".join(f"{s['mean']:.2f}" if s else "-" for s in means)
        hit = [
            p
            for p in res.paired
            if (p["experiment"], p["env"], p["judge"], p["kind"], p["metric"])
            == (exp.name, env, judge, "rounds", metric)
            and p["comparison"].startswith(f"{m}:")
        ]
        cells = [m, per, mean, hit[0]["text"] if hit else "-"]
        lines.append(_row(cells + ([_verdict(metric, hit)] if judged else [])))
    if len(lines) == 2:
        return []
    return lines + ["", f"{_VERDICT_RULE.capitalize()}.", ""] if judged else lines + [""]


def _per_run(exp: Experiment, rows: list[dict], metric: str) -> str:
    """A method's values in seed and series order, ``-`` where a run is missing (a cell
    that failed or was not run): a row with a gap says so, and where."""
    by = {(r["seed"], r["series"]): r for r in rows}
    keys = [(seed, series) for seed in exp.seeds for series in range(exp.series)]
    if not set(by) <= set(keys):  # runs of seeds the grid no longer lists: as they are
        return " ".join(_num(r.get(metric)) for r in rows)
    return " ".join(_num(by[k].get(metric)) if k in by else "-" for k in keys)


def _per(exp: Experiment) -> str:
    """What one value of a method's row is: a seed's run, a series' or a seed's series'."""
    if exp.series < 2:
        return "per seed"
    return "per series" if len(exp.seeds) < 2 else "per seed and series"


#: The sections of a place in the report, by the name a doc block gives (docs/bench.md).
SECTIONS = {
    "methods": _methods_table,
    "paired": _paired_table,
    "figures": _all_figures,
    "crafter": _crafter,
    "rounds": _rounds_table,
}
#: The sections of each round, in report order (``rounds`` follows an experiment's last round).
ROUND_SECTIONS = ("methods", "paired", "figures", "crafter")


def _row(cells: Iterable[str]) -> str:
    """One line of a Markdown table: as many cells as given (:func:`_rule` gives its rule)."""
    return "| " + " | ".join(cells) + " |"


def _rule(n: int) -> str:
    """The line under a table's header of ``n`` cells."""
    return "|" + "---|" * n


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.2f}"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")
