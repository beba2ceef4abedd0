"""Text fields: the agent on a real program with a text field, with and without the rule
that a field's echo is no reaction of the program (``perception.field_echo``; docs/agent.md,
"Text fields"), paired by seed.

Each seed runs ``kgagent play --env desktop --launch CMD --steps N --seed S`` twice, into
fresh memories: with the rule (the default) and with ``--set perception.field_echo=false``
(the agent as it was before the rule: the switch returns before anything is measured).
From each step log it counts, over the run's inputs (every grounded operation sent):

* ``typed``: the share of inputs that entered text (a one-character key, space,
  backspace or delete, or a typed string): what a form traps the agent into;
* ``ended``: episodes, i.e. how often the program ended and was started again (on a
  form, OK or Cancel: how often the agent got past the fields);
* ``states``: distinct states visited;
* ``echoes``: executions marked as a field's echo.

It prints every run, then mean ± SE per arm and the paired difference (with − without)
with its t (``kgagent.bench.stats.paired_t``). A desktop run is not deterministic (the
program's timing), so both arms of a seed run back to back on a quiet machine.

    python benchmarks/text_fields.py --launch "env HOME=/tmp/tf-home zenity --forms \\
        --add-entry=Name --add-entry=City --add-password=Secret --text=Register" --seeds 10
    python benchmarks/text_fields.py --launch "env HOME=/tmp/tf-home /usr/games/xboard -ncp"

``--memories WITHOUT WITH`` measures runs made otherwise instead (memories ``WITHOUT-S`` and
``WITH-S`` for the seeds; e.g. the arm without the rule played from an older commit in a
``git worktree``):

    python benchmarks/text_fields.py --memories /tmp/tf/old /tmp/tf/new --seeds 10
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kgagent.bench.stats import mean_sd_se, paired_t
from kgagent.runlog_read import read_log

ARMS = {"with": [], "without": ["--set", "perception.field_echo=false"]}
METRICS = ("typed", "ended", "states", "echoes")
TEXT_KEYS = ("space", "backspace", "delete")


def _typed(op: dict) -> bool:
    key = op.get("key") or ""
    return (op["kind"] == "type" and bool(op.get("text"))) or (
        op["kind"] == "key" and (len(key) == 1 or key in TEXT_KEYS)
    )


def measure(log: Path) -> dict[str, float]:
    """The figures of one step log (see the module docstring)."""
    _header, steps, summary = read_log(log)
    inputs = typed = echoes = 0
    states: set[str] = set()
    for rec in steps:
        states.add(rec["state_id"])
        for ex in rec["executions"]:
            states.add(ex["to_state"])
            echoes += bool(ex.get("echo"))
            for g in ex["grounding"]:
                if g.get("action") is None or g.get("error"):
                    continue
                inputs += 1
                typed += _typed(g["op"])
    episodes = (summary or {}).get("episodes") or 1
    return {
        "typed": typed / inputs if inputs else 0.0,
        "ended": float(episodes - 1 + (not (summary or {}).get("alive", True))),
        "states": float(len(states - {None})),
        "echoes": float(echoes),
    }


def play(launch: str, seed: int, steps: int, memory: Path, extra: list[str]) -> Path:
    cmd = [
        sys.executable, "-m", "kgagent.cli.main", "play", "--env", "desktop",
        "--launch", launch, "--steps", str(steps), "--seed", str(seed),
        "--memory", str(memory), "--quiet", *extra,
    ]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    logs = sorted((memory / "runs").glob("*.jsonl"))
    if not logs:
        raise SystemExit(f"error: no step log in {memory / 'runs'}")
    return logs[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launch", help="the program's command (desktop.launch)")
    ap.add_argument(
        "--memories",
        nargs=2,
        type=Path,
        metavar=("WITHOUT", "WITH"),
        help="measure the memories WITHOUT-S and WITH-S of runs made otherwise",
    )
    ap.add_argument("--seeds", type=int, default=10, help="seeds 1..N (default 10)")
    ap.add_argument("--steps", type=int, default=80, help="steps per run (default 80)")
    ap.add_argument("--out", type=Path, help="keep the memories here (default: a temp dir)")
    ap.add_argument("--json", action="store_true", help="print the runs as JSON lines too")
    a = ap.parse_args(argv)
    if (a.launch is None) == (a.memories is None):
        ap.error("give --launch (run both arms) or --memories WITHOUT WITH (measure runs)")
    out = a.out or Path(tempfile.mkdtemp(prefix="kgagent-text-fields-"))
    rows: dict[str, dict[int, dict[str, float]]] = {arm: {} for arm in ARMS}
    try:
        for seed in range(1, a.seeds + 1):
            for arm, extra in ARMS.items():
                if a.memories is not None:
                    mem = Path(f"{a.memories[arm == 'with']}-{seed}")
                    logs = sorted((mem / "runs").glob("*.jsonl"))
                    if not logs:
                        raise SystemExit(f"error: no step log in {mem / 'runs'}")
                    row = measure(logs[-1])
                else:
                    mem = out / f"{arm}-{seed}"
                    shutil.rmtree(mem, ignore_errors=True)
                    row = measure(play(a.launch, seed, a.steps, mem, extra))
                rows[arm][seed] = row
                figures = "  ".join(f"{k} {row[k]:.2f}" for k in METRICS)
                print(f"seed {seed:2d} {arm:7s} {figures}", flush=True)
                if a.json:
                    print(json.dumps({"seed": seed, "arm": arm, **row}))
    finally:
        if a.out is None:
            shutil.rmtree(out, ignore_errors=True)
    seeds = sorted(rows["with"])
    what = repr(a.launch) if a.launch else " vs ".join(str(m) for m in a.memories)
    print(f"\n{what}: {len(seeds)} seeds; with − without, paired by seed")
    for k in METRICS:
        w = [rows["with"][s][k] for s in seeds]
        wo = [rows["without"][s][k] for s in seeds]
        (mw, _, sw), (mo, _, so) = mean_sd_se(w), mean_sd_se(wo)
        p = paired_t(w, wo)
        t = "—" if p.t is None else f"{p.t:.1f}"
        se = lambda v: "—" if v is None else f"{v:.2f}"  # noqa: E731
        print(
            f"{k:7s} without {mo:.2f} ± {se(so)}  with {mw:.2f} ± {se(sw)}  "
            f"diff {p.mean:+.2f} ± {se(p.se)}  t {t}  ({p.up} up, {p.even} even, {p.down} down)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
