"""benchmarks/experiments/step_paths.py: where a run's steps and inputs went, from step logs."""

from __future__ import annotations

import json
from pathlib import Path

from . import load_experiment


def _load():
    return load_experiment("step_paths")


def _grounding(kind: str, change: float, **op: str) -> dict:
    return {"op": {"kind": kind, **op}, "change": change}


def test_paths_progress_and_inputs_are_counted_per_group(tmp_path: Path, capsys) -> None:
    steps = [
        {
            "type": "step",
            "path": "hq",
            "executions": [
                {
                    "path": "hq",
                    "evaluated": True,
                    "r_progress": 1.0,
                    "grounding": [_grounding("key", 0.5, key="x"), _grounding("click", 0.0)],
                },
                {"path": "augment", "evaluated": True, "r_progress": 0.0, "grounding": []},
            ],
        },
        {
            "type": "step",
            "path": "augment",
            "executions": [
                {
                    "path": "augment",
                    "evaluated": False,
                    "grounding": [_grounding("key", 0.0, key="y")],
                }
            ],
        },
    ]
    log = tmp_path / "run.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in [{"type": "run"}, *steps]) + "\n")
    assert _load().main([f"full={tmp_path}/*.jsonl"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["group"] == "full" and out["runs"] == 1 and out["steps"] == 2
    assert out["ended on"] == {"hq": 1, "augment": 1}
    assert out["steps where HQ ran"] == 1
    assert out["evaluated executions"] == {"hq": 1, "augment": 1}
    assert out["progressive share"] == {"hq": 1.0, "augment": 0.0}
    assert out["inputs tried"] == {"keyboard": 2, "pointer": 1}
    assert out["inputs that changed the screen"] == {"keyboard": 1}
    assert out["keys that changed it"] == {"x": 1}


def test_a_file_that_is_not_a_step_log_is_one_error_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "notes.jsonl").write_text("not json\nnor this\n")
    assert _load().main([f"x={tmp_path}/*.jsonl"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "is not JSON" in err and "\n" not in err


def test_a_glob_that_matches_nothing_is_one_error_line(tmp_path: Path, capsys) -> None:
    assert _load().main([f"x={tmp_path}/none-*.jsonl"]) == 2
    assert capsys.readouterr().err.strip() == f"error: no step log matches {tmp_path}/none-*.jsonl"


def test_step_log_globs_are_sorted_and_each_file_counted_once(tmp_path: Path) -> None:
    from kgagent.runlog_read import step_logs

    for name in ("b.jsonl", "a.jsonl"):
        (tmp_path / name).write_text("{}\n")
    got = step_logs([f"{tmp_path}/*.jsonl", f"{tmp_path}/a.*"])
    assert got == [f"{tmp_path}/a.jsonl", f"{tmp_path}/b.jsonl"]


def test_per_run_figures_are_paired_by_seed_between_two_groups(tmp_path: Path, capsys) -> None:
    """Group "a" sends two clicks a run that change nothing; group "b" one key that does
    and one click that does not, so b − a is +1 changed input in every seed."""

    def run(folder: Path, seed: int, grounding: list[dict]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        execution = {"path": "augment", "grounding": grounding}
        step = {"type": "step", "path": "augment", "executions": [execution]}
        lines = [{"type": "run", "seed": seed}, step]
        (folder / f"run-{seed}.jsonl").write_text("\n".join(json.dumps(r) for r in lines))

    for seed in (1, 2, 3):
        run(tmp_path / "a", seed, [_grounding("click", 0.0), _grounding("click", 0.0)])
        run(tmp_path / "b", seed, [_grounding("key", 0.3, key="w"), _grounding("click", 0.0)])
    assert _load().main(["--per-run", f"a={tmp_path}/a/*.jsonl", f"b={tmp_path}/b/*.jsonl"]) == 0
    out = capsys.readouterr().out
    a = json.loads(out[: out.index("}\n{") + 1])
    assert a["per run"]["1"] == {"keyboard": 0, "pointer": 2, "changed": 0, "keyboard share": 0.0}
    assert (
        out.strip()
        .splitlines()[-1]
        .startswith("b − a, inputs that changed the screen, by seed: +1.0 ± 0.0 SE (no spread")
    )
