"""The one Config: papers' defaults, TOML overrides, CLI overrides, clear errors."""

from __future__ import annotations

import pytest

from kgagent.config import Config
from kgagent.errors import ConfigError


def test_defaults_are_the_papers_values():
    c = Config()
    assert (c.memory.alpha, c.memory.c0) == (0.7, 5.0)
    assert c.invocation.c1 == 5.0 and c.invocation.m_samples == 5
    assert c.invocation.exploration_trigger == 0.9
    assert c.invocation.base_exploration_utility == 0.1
    assert (c.rewards.novel_new, c.rewards.novel_known) == (1.0, 0.015)
    assert c.perception.change_threshold == 30 and c.perception.clip_model == "ViT-B-32"
    assert c.run.episode_limit == 500


def test_toml_then_dotted_overrides(tmp_path):
    p = tmp_path / "k.toml"
    p.write_text(
        "[memory]\ntheta_merge = 0.97\ntheta_simi = 0.9\n[invocation]\nm_samples = 3\n"
        '[augment]\nkeys = ["enter", "f1"]\n'
    )
    c = Config.load(
        p,
        [
            "invocation.m_samples=7",
            "run.env=civgame",
            "desktop.region=1,2,3,4",
            "brain.budget_usd=none",
        ],
    )
    assert c.memory.theta_merge == 0.97 and c.memory.theta_simi == 0.9
    assert c.invocation.m_samples == 7
    assert c.run.env == "civgame"
    assert c.augment.keys == ("enter", "f1")
    assert c.desktop.region == (1, 2, 3, 4)
    assert c.brain.budget_usd is None


@pytest.mark.parametrize(
    "override, message",
    [
        ("nosuch.x=1", "unknown config section"),
        ("memory.nosuch=1", "unknown config field memory.nosuch"),
        ("invocation.m_samples=abc", "invocation.m_samples"),
        ("memory.engine=sqlite", "memory.engine"),
        ("run.ablation=bogus", "run.ablation"),
        ("no_equals_sign", "section.field=value"),
    ],
)
def test_bad_overrides_are_one_clear_error(override, message):
    with pytest.raises(ConfigError, match=message):
        Config.load(None, [override])


def test_thresholds_must_be_ordered():
    with pytest.raises(ConfigError, match="theta_simi"):
        Config.load(None, ["memory.theta_merge=0.8", "memory.theta_simi=0.9"])


def test_missing_and_invalid_toml(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        Config.load(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[memory\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        Config.load(bad)


def test_ablation_switches_reward_terms():
    c = Config.load(None, ["run.ablation=no_vlm_rewards"])
    c.apply_ablation()
    assert not c.rewards.use_progress and not c.rewards.use_semantic
    assert c.rewards.use_state and c.rewards.use_novelty


def test_change_floors_are_raised_above_idle_noise_never_lowered():
    cfg = Config()
    base = cfg.augment.min_change
    assert cfg.raise_change_floors(0.0) == {}  # a still screen changes nothing
    assert cfg.raise_change_floors(base / 4) == {}  # 2 × noise is still below the floor
    raised = cfg.raise_change_floors(0.001)  # e.g. a spinner: 0.1 % of the pixels
    assert set(raised) == {
        "augment.min_change",
        "brain.offline_min_change",
        "rewards.screen_novelty_change",
    }
    assert cfg.augment.min_change == cfg.brain.offline_min_change == pytest.approx(0.002)
    assert cfg.rewards.screen_novelty_change == pytest.approx(0.002)
    assert raised["augment.min_change"] == (base, pytest.approx(0.002))
    cfg.raise_change_floors(0.0001)  # a later, quieter probe does not lower them
    assert cfg.augment.min_change == pytest.approx(0.002)
    cfg.desktop.noise_margin = 0.5
    with pytest.raises(ConfigError, match="noise_margin"):
        cfg.validate()
