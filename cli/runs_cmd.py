"""`kgagent runs`: the step logs that `kgagent play` wrote.

``runs list`` shows the logs in a memory's ``runs/`` folder, ``runs show LOG``
summarises one log (its summary line, or one rebuilt from the step lines when
the run was killed before writing it).
"""

from __future__ import annotations

from pathlib import Path

import click

from kgagent.errors import ConfigError

from .common import memory_option
from .output import emit, format_option


@click.group("runs")
def runs_group() -> None:
    """Step logs of past runs."""


def _summary_of(path: Path) -> dict:
    from kgagent.agent.runner import executions_by_path, read_log, summarise

    header, steps, summary = read_log(path)
    if summary is not None:
        d = {k: v for k, v in summary.items() if k != "type"}
        d.setdefault("executions_by_path", executions_by_path(steps))  # logs before session 6
        return d
    h = header or {}
    truth = steps[-1].get("truth", {}) if steps else {}
    rebuilt = summarise(
        steps,
        env=h.get("env", "?"),
        seed=int(h.get("seed", 0)),
        ablation=h.get("ablation", "?"),
        stats={},
        truth=truth,
        stopped="incomplete",
        duration_s=float(sum(s.get("duration_s", 0.0) for s in steps)),
    )
    rebuilt.log_path = str(path)
    return rebuilt.to_dict()


@runs_group.command("show")
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@format_option
def show_cmd(log: Path, fmt: str) -> None:
    """Summarise the step log LOG (a .jsonl file written by `kgagent play`)."""
    from kgagent.agent.runner import RunSummary

    d = _summary_of(log)
    if fmt == "table":
        fields = RunSummary.__dataclass_fields__
        click.echo(RunSummary(**{k: v for k, v in d.items() if k in fields}).format_table())
    else:
        emit([d], fmt)


@runs_group.command("list")
@memory_option
@format_option
def list_cmd(memory: Path, fmt: str) -> None:
    """List the step logs in the memory's runs folder, oldest first."""
    folder = memory / "runs"
    if not folder.is_dir():
        raise ConfigError(f"no runs folder at {folder}; run `kgagent play --memory {memory}` first")
    rows = []
    for p in sorted(folder.glob("*.jsonl")):
        try:
            d = _summary_of(p)
        except ConfigError as e:
            rows.append({"log": p.name, "env": "?", "error": str(e)})
            continue
        rows.append(
            {
                "log": p.name,
                "env": d.get("env"),
                "seed": d.get("seed"),
                "ablation": d.get("ablation"),
                "steps": d.get("steps"),
                "stopped": d.get("stopped"),
                "progression": d.get("progression"),
                "score": d.get("score"),
                "err": round(float(d.get("err", 0.0)), 3),
                "cost_usd": round(float(d.get("cost_usd", 0.0)), 4),
            }
        )
    if not rows:
        click.echo(f"no step logs in {folder}")
        return
    emit(rows, fmt)
