"""Short plays on the built-in games: memory grows and the summary agrees with the step log."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgagent.agent.runner import Runner
from kgagent.runlog_read import read_log


def _play(cfg, tmp_path, env: str, steps: int, ablation: str = "full"):
    cfg.run.env = env
    cfg.run.ablation = ablation
    cfg.run.seed = 1
    return Runner(cfg, memory_path=tmp_path / "mem", progress=False, log=lambda m: None).run(steps)


@pytest.mark.parametrize("env", ["cardgame", "civgame"])
def test_short_play_grows_memory_and_log_matches_summary(cfg, tmp_path, env) -> None:
    s = _play(cfg, tmp_path, env, 35)
    # 35 steps, or fewer when the game ended (a lost fight is a game over)
    assert (s.steps, s.stopped) == (35, "steps") or (s.steps < 35 and s.stopped == "terminated")
    assert s.nodes > 1 and s.skills_augmented > 0 and s.objects > 0
    header, steps, summary = read_log(s.log_path)
    assert header["env"] == env and header["ablation"] == "full"
    assert len(steps) == s.steps
    assert [r["step"] for r in steps] == list(range(1, s.steps + 1))
    execs = [e for r in steps for e in r["executions"]]
    assert s.executions == len(execs)
    assert s.err == pytest.approx(sum(e["valid_transition"] for e in execs) / len(execs))
    assert s.actions == sum(r["actions"] for r in steps)
    # where executions went and where ERR was lost, path by path
    by_path = s.executions_by_path
    assert sum(n for n, _, _ in by_path.values()) == s.executions
    assert sum(v for _, v, _ in by_path.values()) == s.valid_executions
    for path, (n, valid, nothing) in by_path.items():
        mine = [e for e in execs if e["path"] == path]
        assert n == len(mine) and valid == sum(e["valid_transition"] for e in mine)
        assert nothing == sum(e["actions"] == 0 for e in mine)
    assert summary["executions_by_path"] == by_path
    assert s.progression == steps[-1]["truth"]["progression"]
    assert summary["nodes"] == s.nodes and summary["skill_edges"] == s.skill_edges
    for r in steps:  # every step's reward terms add up (Eq. 9)
        total = r["r_progress"] + r["r_semantic"] + r["r_state"] + r["r_novel"]
        assert r["r_total"] == pytest.approx(total)
        assert r["path"] in ("hq", "cluster", "augment", "random", "idle")


def test_resume_keeps_memory_and_ablations_differ(cfg, tmp_path) -> None:
    first = _play(cfg, tmp_path, "cardgame", 15)
    second = _play(cfg, tmp_path, "cardgame", 15)
    assert second.skills_augmented >= first.skills_augmented and second.nodes >= first.nodes
    rnd = _play(cfg, tmp_path / "r", "cardgame", 10, "random")
    assert rnd.skills_augmented == 0 and rnd.skill_edges == 0
    assert rnd.paths == {"random": 10}
    bottom_up = _play(cfg, tmp_path / "b", "cardgame", 12, "no_graph")
    assert bottom_up.skill_edges == 0 and "hq" not in bottom_up.paths
    assert bottom_up.skills_augmented > 0


def test_cli_play_and_runs(tmp_path) -> None:
    from kgagent.cli.play import play_cmd
    from kgagent.cli.runs_cmd import runs_group

    mem = tmp_path / "m"
    args = ["--steps", "5", "--memory", str(mem), "--quiet", "--set", "perception.encoder=pixel"]
    r = CliRunner().invoke(play_cmd, args)
    assert r.exit_code == 0, r.output
    assert "progression" in r.output and "skill edges" in r.output
    r = CliRunner().invoke(runs_group, ["list", "--memory", str(mem), "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert rows[0]["steps"] == 5
    log = next((mem / "runs").glob("*.jsonl"))
    r = CliRunner().invoke(runs_group, ["show", str(log)])
    assert r.exit_code == 0 and "ERR" in r.output
    assert "executions" in r.output and "% valid" in r.output
    # A log written before the per-path breakdown existed: it is rebuilt from the steps.
    lines = log.read_text().splitlines()
    summary = json.loads(lines[-1])
    by_path = summary.pop("executions_by_path")
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join([*lines[:-1], json.dumps(summary)]) + "\n")
    r = CliRunner().invoke(runs_group, ["show", str(old), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)[0]["executions_by_path"] == by_path
