"""The one Config: papers' defaults, TOML overrides, CLI overrides, every field validated."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from kgagent.config import MAX_CONFIG_BYTES, Config
from kgagent.config_doc import DOC, render_fields, splice
from kgagent.config_fields import FieldSpec
from kgagent.errors import ConfigError


def test_defaults_are_the_papers_values():
    c = Config()
    assert (c.memory.alpha, c.memory.c0) == (0.7, 5.0)
    assert c.invocation.c1 == 5.0 and c.invocation.m_samples == 5
    assert c.invocation.exploration_trigger == 0.9
    assert c.invocation.base_exploration_utility == 0.1
    assert c.library.prune_c == 0.5
    assert (c.rewards.novel_new, c.rewards.novel_known) == (1.0, 0.015)
    assert (c.rewards.state_coef, c.rewards.novel_coef) == (1.0, 1.0)
    assert c.perception.change_threshold == 30 and c.perception.clip_model == "ViT-B-32"
    assert c.run.episode_limit == 500


def test_defaults_validate():
    Config().validate()
    Config.load(None, [])


def test_toml_then_dotted_overrides(tmp_path):
    p = tmp_path / "k.toml"
    p.write_text(
        "[memory]\ntheta_merge = 0.97\ntheta_simi = 0.9\n[invocation]\nm_samples = 3\n"
        '[augment]\ntexts = ["enter", "f1"]\n[rewards]\nnovel_coef = 2\n'
    )
    c = Config.load(
        p,
        [
            "invocation.m_samples=7",
            "run.env=civgame",
            "desktop.region=1,2,3,4",
            "brain.budget_usd=none",
            "run.restart=true",
        ],
    )
    assert c.memory.theta_merge == 0.97 and c.memory.theta_simi == 0.9
    assert c.invocation.m_samples == 7
    assert c.run.env == "civgame"
    assert c.augment.texts == ("enter", "f1")
    assert c.rewards.novel_coef == 2.0 and isinstance(c.rewards.novel_coef, float)
    assert c.desktop.region == (1, 2, 3, 4)
    assert c.brain.budget_usd is None
    assert c.run.restart is True


def test_text_fields_take_the_override_as_text():
    c = Config.load(
        None,
        [
            "brain.model=4",
            "perception.sam_checkpoint=~/weights/sam_vit_b.pth",
            "augment.texts=enter,1",
            'brain.api_key_env="MY_KEY"',
        ],
    )
    assert c.brain.model == "4"
    assert c.perception.sam_checkpoint == "~/weights/sam_vit_b.pth"
    assert c.augment.texts == ("enter", "1")
    assert c.brain.api_key_env == "MY_KEY"


@pytest.mark.parametrize(
    "override, message",
    [
        ("nosuch.x=1", "unknown config section 'nosuch'; known: memory"),
        ("memory.nosuch=1", "unknown config field memory.nosuch"),
        ("no_equals_sign", "override 'no_equals_sign' must look like section.field=value"),
        # a single threshold out of range
        (
            "memory.theta_merge=1.5",
            "memory.theta_merge = 1.5: must be a number in [-1, 1] (or none)",
        ),
        ("memory.theta_simi=-5", "memory.theta_simi = -5.0: must be a number in [-1, 1] (or none)"),
        # types
        ("memory.alpha=true", "memory.alpha = true: must be a number in [0, 1]"),
        (
            "memory.backup_on_migrate=maybe",
            'memory.backup_on_migrate = "maybe": must be true or false',
        ),
        ("memory.backup_on_migrate=1", "memory.backup_on_migrate = 1: must be true or false"),
        ("rewards.use_state=yes", 'rewards.use_state = "yes": must be true or false'),
        ("invocation.m_samples=abc", 'invocation.m_samples = "abc": must be an integer >= 1'),
        ("invocation.m_samples=2.5", "invocation.m_samples = 2.5: must be an integer >= 1"),
        ("memory.c0=nan", "memory.c0 = nan: must be a number > 0"),
        ("memory.c0=inf", "memory.c0 = inf: must be a number > 0"),
        ("run.env=", 'run.env = "": must be a non-empty string'),
        ("memory.path=", 'memory.path = "": must be a non-empty string (or none)'),
        ("run.steps=none", "run.steps = none: must be an integer >= 0"),
        # ranges (issue: nonsense values that ran silently)
        ("memory.vector_flush_rows=0", "memory.vector_flush_rows = 0: must be an integer >= 1"),
        ("memory.vector_flush_rows=-1", "memory.vector_flush_rows = -1: must be an integer >= 1"),
        ("memory.compact_every=-1", "memory.compact_every = -1: must be an integer >= 0"),
        ("library.cluster_every=-1", "library.cluster_every = -1: must be an integer >= 0"),
        ("library.max_library=-1", "library.max_library = -1: must be an integer >= 1"),
        ("library.max_library=0", "library.max_library = 0: must be an integer >= 1"),
        ("invocation.tau_start=0", "invocation.tau_start = 0.0: must be a number > 0"),
        ("invocation.tau_min=0", "invocation.tau_min = 0.0: must be a number > 0"),
        ("perception.max_objects=0", "perception.max_objects = 0: must be an integer in [1, 4096]"),
        (
            "perception.grounding_scales=[]",
            "perception.grounding_scales = []: must be a list of numbers > 0, at least one",
        ),
        (
            "perception.grounding_scales=1.0,-0.5",
            "perception.grounding_scales = [1.0, -0.5]: must be a list of numbers > 0",
        ),
        ("augment.residual_grid=0", "augment.residual_grid = 0: must be an integer in [1, 128]"),
        ("perception.clip_batch_size=0", "perception.clip_batch_size = 0: must be an integer >= 1"),
        (
            "desktop.region=1,2",
            "desktop.region = [1, 2]: must be 4 integers (x, y, w, h with w, h > 0) (or none)",
        ),
        (
            "desktop.region=0,0,0,600",
            "desktop.region = [0, 0, 0, 600]: must be 4 integers (x, y, w, h with w, h > 0)",
        ),
        ("desktop.region=0,0,1.5,600", "desktop.region = [0, 0, 1.5, 600]: must be 4 integers"),
        (
            "augment.rare_action_prob=1.5",
            "augment.rare_action_prob = 1.5: must be a number in [0, 1]",
        ),
        (
            "invocation.exploration_trigger=-0.1",
            "invocation.exploration_trigger = -0.1: must be a number in [0, 1]",
        ),
        ("invocation.prob_clip=0.5", "invocation.prob_clip = 0.5: must be a number in [0, 0.5)"),
        ("rewards.fitness_decay=1", "rewards.fitness_decay = 1.0: must be a number in [0, 1)"),
        ("run.seed=-1", "run.seed = -1: must be an integer >= 0"),
        ("run.episode_limit=0", "run.episode_limit = 0: must be an integer >= 1"),
        ("memory.engine=sqlite", 'memory.engine = "sqlite": must be one of ladybug, kuzu'),
        ("run.ablation=bogus", 'run.ablation = "bogus": must be one of full, no_similarity'),
        ("brain.image_detail=max", 'brain.image_detail = "max": must be one of low, high, auto'),
        ("brain.jpeg_quality=0", "brain.jpeg_quality = 0: must be an integer in [1, 100]"),
        (
            "brain.base_url=localhost:8000/v1",
            'brain.base_url = "localhost:8000/v1": must be a non-empty string starting with '
            "http:// or https://, e.g. http://localhost:8000/v1 (or none)",
        ),
        ("brain.base_url=ftp://host/v1", 'brain.base_url = "ftp://host/v1": must be'),
        ("brain.base_url=http://", 'brain.base_url = "http://": must be'),
        ("desktop.noise_margin=0.5", "desktop.noise_margin = 0.5: must be a number >= 1"),
        (
            "perception.device=tpu9",
            'perception.device = "tpu9": must be a non-empty string naming a torch device: '
            "cpu, cuda, cuda:N (N a GPU's index), mps or xpu",
        ),
        ("perception.device=cuda:1:2", 'perception.device = "cuda:1:2": must be'),
        ("perception.device=CPU", 'perception.device = "CPU": must be'),
        (
            "perception.change_threshold=255",
            "perception.change_threshold = 255: must be an integer",
        ),
    ],
)
def test_each_refused_override_is_one_line_naming_field_value_and_rule(override, message):
    with pytest.raises(ConfigError) as e:
        Config.load(None, [override])
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "toml, message",
    [
        ("[memory]\nalpha = true\n", "memory.alpha = true: must be a number"),
        ('[run]\nsteps = "12"\n', 'run.steps = "12": must be an integer'),
        ("[brain]\nmodel = 4\n", "brain.model = 4: must be a non-empty string"),
        ("[perception]\ngrounding_scales = []\n", "perception.grounding_scales = []"),
        ("[desktop]\nregion = [1, 2, 3]\n", "desktop.region = [1, 2, 3]: must be 4 integers"),
        ("[memory]\nvector_flush_rows = 0\n", "memory.vector_flush_rows = 0"),
        ("memory = 3\n", "config section [memory] must be a table"),
        ("[nosuch]\nx = 1\n", "unknown config section 'nosuch'"),
    ],
)
def test_refused_values_in_a_config_file(tmp_path, toml, message):
    p = tmp_path / "k.toml"
    p.write_text(toml)
    with pytest.raises(ConfigError) as e:
        Config.load(p)
    assert str(e.value).startswith(message), str(e.value)


@pytest.mark.parametrize(
    "value, says",
    [
        ("sk-abc123secret", "looks like a key"),
        ("sk-proj-" + "Ab1" * 16, "looks like a key"),
        ("0123456789abcdef0123456789", "looks like a key"),
        ("MY-KEY", "not starting with a digit"),
        ("1KEY", "not starting with a digit"),
        ("MY KEY", "not starting with a digit"),
    ],
)
def test_a_key_variable_that_is_no_variable_name_is_refused_unseen(tmp_path, value, says):
    """A key pasted into brain.api_key_env is refused, and the refusal does not repeat it
    (the start line and the step log's header would have kept it)."""
    p = tmp_path / "k.toml"
    p.write_text(f'[brain]\napi_key_env = "{value}"\n')
    cfg = Config()
    cfg.brain.api_key_env = value
    for load in (
        lambda: Config.load(None, [f"brain.api_key_env={value}"]),
        lambda: Config.load(p),
        cfg.validate,
    ):
        with pytest.raises(ConfigError) as e:
            load()
        msg = str(e.value)
        assert value not in msg and says in msg and "\n" not in msg
        assert msg.startswith("brain.api_key_env ")
    assert Config.load(None, ["brain.api_key_env=_MY_KEY2"]).brain.api_key_env == "_MY_KEY2"


def test_values_set_in_code_are_checked_by_validate():
    cfg = Config()
    cfg.memory.alpha = True  # a bool is not a number
    with pytest.raises(ConfigError, match=r"^memory\.alpha = true: must be a number in \[0, 1\]$"):
        cfg.validate()
    cfg = Config()
    cfg.rewards.use_state = 1  # an int is not a bool
    with pytest.raises(ConfigError, match=r"^rewards\.use_state = 1: must be true or false$"):
        cfg.validate()
    cfg = Config()
    cfg.perception.grounding_scales = ()
    with pytest.raises(ConfigError, match="at least one"):
        cfg.validate()


def _outside(spec: FieldSpec) -> list[object]:
    """Values just outside ``spec``'s rule (empty when the rule has no bound)."""
    text = spec.allowed.strip()
    step = 1 if spec.kind == "int" else 0.5
    if m := re.match(r"^([\[(])\s*(\S+)\s*,\s*(\S+)\s*([\])])$", text):
        lo, hi = float(m[2]), float(m[3])
        out = [lo if m[1] == "(" else lo - step, hi if m[4] == ")" else hi + step]
    elif m := re.match(r"^(>=|>)\s*(\S+)$", text):
        b = float(m[2])
        out = [b if m[1] == ">" else b - step]
    elif "|" in text:
        return ["not-a-choice"]
    else:
        return []
    return [int(v) if spec.kind == "int" else v for v in out]


def test_every_field_is_declared_and_every_bound_is_enforced():
    specs = Config.specs()
    assert len(specs) == sum(len(fields(getattr(Config(), f.name))) for f in fields(Config))
    bounded = 0
    for spec in specs:
        assert spec.source == "ours" or spec.source.startswith("paper: "), spec.name
        assert spec.why.strip() and "\n" not in spec.why, spec.name
        assert spec.describe()
        section, name = spec.name.split(".")
        for bad in _outside(spec):
            cfg = Config()
            value = (bad,) if spec.length == -1 else bad
            setattr(getattr(cfg, section), name, value)
            with pytest.raises(ConfigError, match=rf"^{re.escape(spec.name)} = "):
                cfg.validate()
            bounded += 1
    assert bounded > 60  # most fields have a range


def test_every_field_has_the_right_type_or_is_refused():
    for spec in Config.specs():
        if spec.length is not None:
            continue
        section, name = spec.name.split(".")
        wrong = 1 if spec.kind == "bool" else True if spec.kind in ("int", "float") else 3
        cfg = Config()
        setattr(getattr(cfg, section), name, wrong)
        with pytest.raises(ConfigError, match=rf"^{re.escape(spec.name)} = "):
            cfg.validate()


def test_thresholds_must_be_ordered_and_one_alone_is_checked():
    with pytest.raises(ConfigError, match="theta_simi = 0.9 must be below memory.theta_merge"):
        Config.load(None, ["memory.theta_merge=0.8", "memory.theta_simi=0.9"])
    assert Config.load(None, ["memory.theta_merge=0.97"]).memory.theta_merge == 0.97
    assert Config.load(None, ["memory.theta_simi=0.5"]).memory.theta_simi == 0.5


def test_missing_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        Config.load(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[memory\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        Config.load(bad)
    latin = tmp_path / "latin.toml"
    latin.write_bytes('[run]\nenv = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 16 is 0xe9\)"):
        Config.load(latin)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(ConfigError, match="is larger than"):
        Config.load(big)
    with pytest.raises(ConfigError, match="cannot read config file"):
        Config.load(tmp_path)  # a directory


def test_config_from_an_endless_device_is_refused():
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    with pytest.raises(ConfigError, match="is larger than"):
        Config.load("/dev/zero")


def test_effective_resolves_ablations_into_settings_and_leaves_the_original():
    c = Config.load(None, ["run.ablation=no_vlm_rewards"])
    e = c.effective()
    assert not e.rewards.use_progress and not e.rewards.use_semantic
    assert e.rewards.use_state and e.rewards.use_novelty
    assert c.rewards.use_progress  # the original is unchanged
    g = Config.load(None, ["run.ablation=no_graph"]).effective()
    assert not g.rewards.use_state and not g.rewards.use_novelty and g.rewards.use_progress
    s = Config.load(None, ["run.ablation=no_similarity"]).effective()
    assert not s.memory.similarity_edges
    assert e.effective() == e  # idempotent
    e.validate()


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


def test_docs_config_table_is_generated_from_the_declarations():
    text = DOC.read_text(encoding="utf-8")
    assert splice(text, render_fields()) == text, "run: python -m kgagent.config_doc"
    for spec in Config.specs():
        assert f"| `{spec.name.split('.')[1]}` |" in text
    assert "| `alpha` | `0.7` | a number in [0, 1] | paper: Eq. 1, §4 |" in text


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "mps", "xpu:0"])
def test_torch_device_names_are_accepted(device):
    assert Config.load(None, [f"perception.device={device}"]).perception.device == device


def test_every_toml_block_of_docs_config_md_loads(tmp_path: Path) -> None:
    """An example a user copies must be a config kgagent takes."""
    import textwrap

    doc = (Path(__file__).resolve().parent.parent / "docs" / "config.md").read_text("utf-8")
    blocks = re.findall(r"^( *)```toml\n(.*?)^\1```", doc, flags=re.M | re.S)
    assert blocks, "docs/config.md has no ```toml block"
    for i, (_, body) in enumerate(blocks):
        f = tmp_path / f"block{i}.toml"
        f.write_text(textwrap.dedent(body))
        Config.load(f, [])  # raises ConfigError on an unknown field or a bad value


def test_a_config_set_in_code_refuses_misspelt_fields_and_takes_paths_and_numpy() -> None:
    """From Python, a misspelt field would be kept and ignored, a section replaced by a
    dict would fail deep in validate(); a Path or a numpy scalar is what a user has."""
    import numpy as np

    c = Config()
    with pytest.raises(
        ConfigError,
        match=r"memory.thetamerge is not a config field; did you mean memory.theta_merge\?",
    ):
        c.memory.thetamerge = 0.5
    with pytest.raises(ConfigError, match="'memroy' is not a config section"):
        c.memroy = c.memory
    with pytest.raises(ConfigError, match="config.memory must be a MemoryConfig, not dict"):
        c.memory = {"theta_merge": 0.9}  # type: ignore[assignment]
    c.memory.path = Path("/tmp/kg-memory")  # type: ignore[assignment]
    c.run.log_dir = Path("/tmp/kg-logs")  # type: ignore[assignment]
    c.run.steps = np.int64(10)  # type: ignore[assignment]
    c.memory.theta_merge = np.float64(0.95)  # type: ignore[assignment]
    c.desktop.region = [0, 0, 10, 10]  # type: ignore[assignment]
    c.validate()
    assert (c.memory.path, c.run.log_dir) == ("/tmp/kg-memory", "/tmp/kg-logs")
    assert type(c.run.steps) is int and type(c.memory.theta_merge) is float
    assert c.desktop.region == (0, 0, 10, 10)
    c.run.steps = "5"  # type: ignore[assignment]
    with pytest.raises(ConfigError, match='run.steps = "5": must be an integer'):
        c.validate()


@pytest.mark.parametrize(
    "override, says",
    [
        (
            "memory.thetamerge=0.9",
            "unknown config field memory.thetamerge; did you mean memory.theta_merge?",
        ),
        ("run.stpes=3", "unknown config field run.stpes; did you mean run.steps?"),
        ("memory.max_objects=3", "did you mean perception.max_objects?"),  # another section's
        ("memry.alpha=0.5", "unknown config section 'memry'; did you mean memory.alpha?"),
        ("perceptoin.zzz=1", "unknown config section 'perceptoin'; did you mean perception?"),
    ],
)
def test_an_unknown_name_in_set_names_the_closest_field(override, says):
    with pytest.raises(ConfigError) as e:
        Config.load(None, [override])
    assert says in str(e.value) and "known: " in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "toml, says",
    [
        (
            "[memory]\nalpah = 0.5\n",
            "unknown config field memory.alpah; did you mean memory.alpha?",
        ),
        ("[memroy]\nalpha = 0.5\n", "unknown config section 'memroy'; did you mean memory?"),
    ],
)
def test_an_unknown_name_in_a_file_names_the_closest_field(tmp_path, toml, says):
    p = tmp_path / "k.toml"
    p.write_text(toml)
    with pytest.raises(ConfigError) as e:
        Config.load(p)
    assert says in str(e.value)


def test_a_temperature_floor_above_its_start_is_refused_naming_both():
    with pytest.raises(ConfigError) as e:
        Config.load(None, ["invocation.tau_min=5", "invocation.tau_start=1"])
    assert str(e.value).startswith(
        "invocation.tau_min = 5.0 must be at most invocation.tau_start = 1.0 ("
    )
    cfg = Config.load(None, ["invocation.tau_min=0.5", "invocation.tau_start=0.5"])  # constant τ
    assert cfg.invocation.tau_min == cfg.invocation.tau_start == 0.5
    cfg = Config()
    cfg.invocation.tau_min = 2.0  # set in code: validate refuses it too
    with pytest.raises(ConfigError, match="tau_min = 2.0 must be at most invocation.tau_start"):
        cfg.validate()


@pytest.mark.parametrize(
    "override",
    [
        "perception.max_objects=1000000000",  # np.zeros((max_objects, 4)): 29.8 GiB
        "perception.sam_points_per_side=100000",
        "perception.opencv_text_join=1000000000",  # the closing never ended
        "augment.residual_grid=1000000",  # 10^12 candidate clicks: never ended
        "augment.focus_grow=100000000",  # a 35.5 PiB dilation kernel
        "memory.query_threads=100000000",  # the engine grew past 20 GB
        "gym.size=100000,100000",
        "desktop.screen_size=100000,100000",
    ],
)
def test_fields_that_size_arrays_or_loops_have_an_upper_bound(override):
    name = override.split("=")[0]
    with pytest.raises(ConfigError) as e:
        Config.load(None, [override])
    assert str(e.value).startswith(f"{name} = ") and ", " in str(e.value).split("in [")[1]
    spec = next(s for s in Config.specs() if s.name == name)
    assert "at most" in spec.why  # the bound says why


def _changed() -> list[str]:
    """Overrides that move many fields off their defaults, of every kind."""
    return [
        "memory.theta_merge=0.97",
        "memory.path=/tmp/a b/ü",
        "brain.budget_usd=2.5",
        "brain.temperature=none",  # none where the default is a value
        "augment.texts=['a\"b', 'c\\\\d', '记忆']",
        "perception.grounding_scales=[1.0, 0.5]",
        "desktop.region=1,2,3,4",
        "invocation.prob_clip=1e-7",
        "run.restart=false",
        "run.ablation=no_graph",
    ]


def test_the_config_as_toml_reads_back_to_the_same_values(tmp_path):
    cfg = Config.load(None, _changed())
    p = tmp_path / "back.toml"
    p.write_text(cfg.to_toml({"memory.alpha": "a note\nwith a line break"}), encoding="utf-8")
    back = Config.load(p)
    assert back.to_dict() == cfg.to_dict()
    assert back.brain.temperature is None and back.augment.texts == ('a"b', "c\\\\d", "记忆")
    p.write_text(Config().to_toml(), encoding="utf-8")
    assert Config.load(p).to_dict() == Config().to_dict()


def test_explain_says_where_each_value_came_from(tmp_path, monkeypatch):
    monkeypatch.delenv("KGAGENT_ENGINE", raising=False)  # the Kùzu pass sets it: it would win
    p = tmp_path / "k.toml"
    p.write_text("[memory]\nalpha = 0.5\ntheta_merge = 0.97\n")
    eff, origins = Config.explain(
        p, ["memory.alpha=0.6", "memory.alpha=0.65", "memory.c0=2", "run.ablation=no_graph"]
    )
    by = {o.name: o for o in origins}
    assert len(origins) == len(Config.specs())
    assert (by["memory.alpha"].value, by["memory.alpha"].source) == (
        0.65,
        "--set (last of 2; over the file)",
    )
    assert by["memory.c0"].source == "--set"
    assert by["memory.theta_merge"].source == f"file {p}"
    assert by["memory.engine"].source == "default (ours)"
    assert by["memory.theta_simi"].source == "default (paper: §4, Table 4)"
    assert (by["rewards.use_novelty"].value, by["rewards.use_novelty"].source) == (
        False,
        "run.ablation = no_graph",
    )
    assert eff.rewards.use_novelty is False


def test_none_is_kept_as_text_where_it_is_one_of_the_choices(tmp_path):
    """`perception.reader = none` (docs/config.md) means the choice "none", not no value;
    elsewhere "none" is still no value (and refused where a value is needed)."""
    cfg = Config()
    cfg.set_dotted("perception.reader=none")
    assert cfg.perception.reader == "none"
    f = tmp_path / "c.toml"
    f.write_text('[perception]\nreader = "none"\n')
    assert Config.load(f).perception.reader == "none"
    with pytest.raises(ConfigError, match="brain.model = none: must be"):
        Config().set_dotted("brain.model=none")


@pytest.mark.parametrize(
    "override",
    [
        "perception.dedup_center_distance=1e155",  # squared in the segmenter: overflow
        "rewards.past_effects=100000000000000000000",  # a deque's length: overflow
        "run.seed=1e20",
    ],
)
def test_a_number_too_large_to_mean_anything_is_refused_before_the_run(override):
    with pytest.raises(ConfigError, match=r"too large \((at most 1e\+15 in size|an integer of)"):
        Config().set_dotted(override)


def test_a_seed_may_be_any_64_bit_integer():
    cfg = Config()
    cfg.set_dotted("run.seed=1733560000000000000")  # a nanosecond timestamp
    assert cfg.run.seed == 1733560000000000000


def test_text_that_is_not_unicode_is_refused():
    """Bytes from the command line that are not UTF-8 (surrogate-escaped by Python): a
    config file written from them (`kgagent config --format toml`) could not be read."""
    with pytest.raises(ConfigError, match="brain.model: the value is not UTF-8 text"):
        Config().set_dotted("brain.model=\udcff\udcfe")


def test_the_doc_tool_without_docs_is_one_line(tmp_path, capsys) -> None:
    """An installed copy has no docs/config.md: one line, not a traceback."""
    from kgagent.config_doc import main

    assert main(["--check", "--doc", str(tmp_path / "config.md")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot read ") and "checkout" in err[0]


def test_the_doc_tool_under_python_oo_is_one_line() -> None:
    """`python -OO` strips the docstrings the tables are made of: one line, exit 2."""
    out = subprocess.run(
        [sys.executable, "-OO", "-m", "kgagent.config_doc", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == "error: the config docs are made from docstrings: run without -OO"
