"""One typed configuration object with the papers' defaults.

Every threshold and constant of SPEC.md lives here, grouped in sections. A TOML
file overrides any field (``[memory] theta_merge = 0.97``), and the CLI
overrides a field with ``--set section.field=value``. Nothing else in kgagent
holds a tunable number: modules receive the ``Config`` (or one of its sections)
as an argument.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from kgagent.errors import ConfigError

ABLATIONS = (
    "full",
    "no_similarity",
    "no_novelty",
    "no_state_reward",
    "no_vlm_rewards",
    "no_graph",
    "random",
)


@dataclass
class MemoryConfig:
    """Where experience lives and how states are merged (SPEC: Memory)."""

    path: str | None = None  # None: the user's data directory (see kgagent.paths)
    engine: str = "ladybug"  # "ladybug" (default, measured faster) or "kuzu"
    # None means: the encoder's own default (CLIP: 0.95 / 0.88, the papers' values).
    theta_merge: float | None = None
    theta_simi: float | None = None
    alpha: float = 0.7  # Eq. 1: weight of visual change vs fitness
    c0: float = 5.0  # Eq. 1: fitness sensitivity
    object_hash_distance: int = 6  # max Hamming distance of 64-bit pHashes for one object
    object_size_tolerance: float = 0.25  # ... and at most this relative difference in w and h
    similar_weight_tolerance: float = 0.005  # rewrite a SIMILAR weight only when it moves more
    query_threads: int = 1  # threads per graph query (1: lowest step latency; 0: every core)
    vector_flush_rows: int = 64  # move the vector journal into LanceDB after this many records
    compact_every: int = 50  # compact vectors after this many LanceDB appends (0: on close)
    backup_on_migrate: bool = True


@dataclass
class PerceptionConfig:
    """Screens to features and objects (SPEC: Environment IO)."""

    encoder: str = "auto"  # "auto" | "clip" | "pixel"
    clip_model: str = "ViT-B-32"
    clip_weights: str | None = None  # a local file, or an open_clip pretrained tag ("openai")
    device: str = "cpu"
    segmenter: str = "auto"  # "auto" | "sam" | "opencv"
    sam_model: str = "vit_b"  # vit_b | vit_l | vit_h | vit_t (MobileSAM, if installed)
    sam_checkpoint: str | None = None
    sam_max_area_ratio: float = 0.03  # drop masks larger than 3% of the screen
    sam_min_side: int = 5  # drop masks thinner than 5 px
    sam_min_texture_std: float = 2.0  # drop near-constant masks
    dedup_center_distance: float = 10.0  # px
    max_objects: int = 64
    grounding_threshold: float = 0.8  # TM_CCOEFF_NORMED
    grounding_scales: tuple[float, ...] = (1.0, 0.9, 1.1, 0.8, 1.25)
    change_threshold: int = 30  # SPEC: grey levels for Δ
    clip_batch_size: int = 32  # screens per CLIP forward pass
    sam_points_per_side: int = 32  # SAM automatic mask generator grid (SAM's default)
    dedup_hash_distance: int = 4  # overlapping segments within this pHash distance are one
    opencv_edge_threshold: int = 24  # OpenCV segmenter: colour-gradient level that is an edge
    opencv_text_join: int = 7  # OpenCV segmenter: px gap closed to join letters into a label
    # Segment again a screen that merged into a known state but changed since that
    # state's objects were segmented (a new hand of cards, a moved unit): augmentation
    # then acts on what is on screen now. Off: objects are segmented once per state
    # (cheaper with SAM on a CPU, where one segmentation takes tens of seconds).
    resegment: bool = True


@dataclass
class InvocationConfig:
    """Two-stage skill invocation (Algorithm 1, Eq. 4, 6, 7)."""

    m_samples: int = 5  # M: HQ samples per attempt
    r_good: float = (
        2.0  # early stop once R_total > r_good: progress and consistency (docs/agent.md)
    )
    c1: float = 5.0  # Eq. 6 exploration constant (the appendix's UCT uses 0.5)
    base_exploration_utility: float = 0.1
    exploration_trigger: float = 0.9  # exploration dominance trigger
    missing_object_penalty: float = 1.0  # P(σ) = penalty × share of missing objects
    tau_start: float = 1.0  # Eq. 7 temperature at zero selections
    tau_min: float = 0.1
    tau_decay: float = 0.05  # τ = max(τ_min, τ_start / (1 + decay·N))
    prob_clip: float = 1e-6  # probabilities clipped to [clip, 1 − clip]
    suspend_after_failures: int = 3
    suspend_steps: int = 50  # a suspended skill is reconsidered after this many steps
    # Anti-cycling (docs/agent.md): a skill whose execution from a state was judged not
    # progressive is not a candidate from that state (stage 1 and stage 2) for this many
    # steps of the episode; 0 disables it.
    stale_steps: int = 50


@dataclass
class AugmentConfig:
    """Bottom-up skill augmentation (SPEC: Skill augmentation)."""

    k_max: int = 3
    candidates_per_length: int = 6  # new atomic actions tried per length k
    # Δ below this is "nothing changed" (docs/agent.md, "What counts as a change"): above
    # a caret or a clock tick, below a changed counter (0.08 % of the screen, measured)
    min_change: float = 0.0002
    keys: tuple[str, ...] = ("enter", "escape", "space", "tab")
    residual_grid: int = 6  # A3: background clicks on an n×n grid
    # Actions on objects where the program reacted to the last action (or to a prefix) come
    # first, unless those places cover more than this share of the screen (docs/agent.md,
    # "Where the program reacted"); 0 switches it off
    focus_max_area: float = 0.5
    # A selection that the program answered with a focus elsewhere (highlighted targets, a
    # menu's items) and that no known skill completes is completed first: the next
    # decision is a follow-up search. Off: measured, it did not help (docs/agent.md,
    # "Open selections")
    complete_selections: bool = False
    rare_action_prob: float = (
        0.15  # A2: share of double/right clicks and drags among object actions
    )


@dataclass
class RewardConfig:
    """Eq. 9–11 and their ablation switches."""

    use_progress: bool = True
    use_semantic: bool = True
    use_state: bool = True
    use_novelty: bool = True
    progress_reward: float = 1.0  # R_progress when the brain judges the step progressive
    semantic_reward: float = 1.0  # R_semantic when the observed change matches the description
    state_coef: float = 1.0  # R_state : R_novel = 1 : 1 by default
    novel_coef: float = 1.0
    novel_new: float = 1.0  # Eq. 11
    novel_known: float = 0.015
    r_prune: float = 0.0  # remove a skill whose R_total stays below this
    prune_window: int = 3  # ... for this many executions in a row
    fitness_decay: float = 0.8  # φ ← decay·φ + (1 − decay)·R_total (bounded, see docs)
    # Screen novelty (Transition.new_screen_in_episode): an after-screen is a new
    # configuration when its Δ (quarter-resolution grey) against every screen of its state
    # seen in this episode exceeds this share of the pixels (docs/agent.md).
    screen_novelty_change: float = 0.0002
    screen_novelty_cap: int = 64  # screens remembered per state per episode (FIFO)
    screen_novelty_total_cap: int = 512  # ... and over all states (FIFO)
    screen_novelty_scale: int = 4  # screens are compared downscaled by this factor


@dataclass
class LibraryConfig:
    """Pruning, refinement and clustering cadence."""

    prune_every: int = 25  # steps
    # Prune while larger. A bound on memory, not a learning device: at 200, a 4-round civgame
    # run (theta_simi 0.9) churned, each new skill pushing out a well-tried one, and round 3
    # lost 11 turns on the mean of 4 series (docs/benchmarks.md, "Session 9").
    max_library: int = 1000
    # Exploration constant of the UCB that ranks skills for that pruning (Eq. 6's form).
    # The appendix's UCT constant, not C1 = 5: with C1 the exploration bonus outweighs
    # fitness, and the most-used skills went first (docs/agent.md, "Pruning at the library cap").
    prune_c: float = 0.5
    refine_below: int = 40  # refine only while the library is this small
    cluster_every: int = 10  # steps


@dataclass
class BrainConfig:
    """The VLM roles: an OpenAI-compatible endpoint or the offline brain."""

    kind: str = "auto"  # "auto" (vlm if base_url or key set, else offline) | "vlm" | "offline"
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = 1.0
    image_max_side: int = 512
    budget_usd: float | None = None
    price_in_per_mtok: float = 0.15
    price_out_per_mtok: float = 0.60
    retry_after_cap_s: float = 30.0  # a server's Retry-After is honoured up to this
    image_format: str = "png"  # "png" | "jpeg" (data URLs sent to the VLM)
    jpeg_quality: int = 85
    image_detail: str | None = None  # OpenAI "low" | "high" | "auto"; None: not sent
    temperature: float | None = 0.0  # None: not sent (some reasoning models reject it)
    max_output_tokens: int | None = 512  # sent as max_tokens; None: not sent
    content_json_fallback: bool = True  # accept a valid JSON object in plain content
    # The offline brain (no language model; SPEC "The offline brain").
    offline_min_change: float = 0.0002  # Δ above this counts as "something changed"
    offline_consistency_cos: float = 0.3  # cos(effect, mean past effect) for R_semantic
    offline_cluster_cos: float = 0.85  # min cos(state, cluster states) to pick a cluster
    offline_effect_window: int = 10  # newest past effects averaged for consistency


@dataclass
class DesktopConfig:
    """The real-desktop driver."""

    window: str | None = None  # title or class to bind to
    region: tuple[int, int, int, int] | None = None  # x, y, w, h
    settle_timeout_s: float = 2.0
    settle_interval_s: float = 0.05
    action_pause_s: float = 0.05
    # Before acting, watch the idle target this long (screenshots every settle_interval_s);
    # if it changes on its own, the "nothing changed" floors are raised above that noise
    # for the run (docs/agent.md, "What counts as a change"). 0 turns the probe off.
    noise_probe_s: float = 1.0
    noise_margin: float = 2.0  # floors become at least noise_margin × the idle Δ


@dataclass
class RunConfig:
    """One `kgagent play` run."""

    env: str = "cardgame"
    steps: int = 200
    episode_limit: int = 500
    seed: int = 0
    ablation: str = "full"
    record: str | None = None
    log_dir: str | None = None  # default: <memory>/runs


@dataclass
class Config:
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    perception: PerceptionConfig = field(default_factory=PerceptionConfig)
    invocation: InvocationConfig = field(default_factory=InvocationConfig)
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    rewards: RewardConfig = field(default_factory=RewardConfig)
    library: LibraryConfig = field(default_factory=LibraryConfig)
    brain: BrainConfig = field(default_factory=BrainConfig)
    desktop: DesktopConfig = field(default_factory=DesktopConfig)
    run: RunConfig = field(default_factory=RunConfig)

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(
        cls, path: str | os.PathLike | None = None, overrides: list[str] | None = None
    ) -> Config:
        """Defaults, then a TOML file, then ``section.field=value`` overrides."""
        cfg = cls()
        if path is not None:
            p = Path(path)
            try:
                data = tomllib.loads(p.read_text())
            except FileNotFoundError:
                raise ConfigError(f"config file not found: {p}") from None
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"config file {p} is not valid TOML: {e}") from None
            cfg.update(data)
        for item in overrides or []:
            cfg.set_dotted(item)
        cfg.validate()
        return cfg

    def update(self, data: dict[str, Any]) -> None:
        for section_name, values in data.items():
            section = self._section(section_name)
            if not isinstance(values, dict):
                raise ConfigError(f"config section [{section_name}] must be a table")
            for key, value in values.items():
                _set_field(section, section_name, key, value)

    def set_dotted(self, item: str) -> None:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(f"override {item!r} must look like section.field=value")
        dotted, raw = item.split("=", 1)
        section_name, key = dotted.strip().split(".", 1)
        section = self._section(section_name)
        _set_field(section, section_name, key, _parse_scalar(raw.strip()))

    def _section(self, name: str) -> Any:
        names = [f.name for f in fields(self)]
        if name not in names:
            raise ConfigError(f"unknown config section {name!r}; known: {', '.join(names)}")
        return getattr(self, name)

    def validate(self) -> None:
        m = self.memory
        if m.engine not in ("ladybug", "kuzu"):
            raise ConfigError(f"memory.engine must be 'ladybug' or 'kuzu', not {m.engine!r}")
        if (
            m.theta_merge is not None
            and m.theta_simi is not None
            and not (-1.0 <= m.theta_simi < m.theta_merge <= 1.0)
        ):
            raise ConfigError("need -1 <= memory.theta_simi < memory.theta_merge <= 1")
        if self.run.ablation not in ABLATIONS:
            raise ConfigError(f"run.ablation must be one of {', '.join(ABLATIONS)}")
        if self.invocation.m_samples < 1:
            raise ConfigError("invocation.m_samples must be >= 1")
        if self.augment.k_max < 1:
            raise ConfigError("augment.k_max must be >= 1")
        if not 0.0 <= self.rewards.fitness_decay < 1.0:
            raise ConfigError("rewards.fitness_decay must be in [0, 1)")
        if self.desktop.noise_probe_s < 0 or self.desktop.noise_margin < 1.0:
            raise ConfigError("need desktop.noise_probe_s >= 0 and desktop.noise_margin >= 1")

    def raise_change_floors(self, idle_change: float) -> dict[str, tuple[float, float]]:
        """Lift the three "nothing changed" floors above a measured idle Δ; never lower them.

        Each of ``augment.min_change``, ``brain.offline_min_change`` and
        ``rewards.screen_novelty_change`` becomes at least ``desktop.noise_margin``
        × ``idle_change``. Returns {field: (old, new)} for the fields it raised.
        """
        floor = self.desktop.noise_margin * float(idle_change)
        raised: dict[str, tuple[float, float]] = {}
        for section, name in (
            ("augment", "min_change"),
            ("brain", "offline_min_change"),
            ("rewards", "screen_novelty_change"),
        ):
            old = getattr(getattr(self, section), name)
            if floor > old:
                setattr(getattr(self, section), name, floor)
                raised[f"{section}.{name}"] = (old, floor)
        return raised

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def apply_ablation(self) -> None:
        """Switch reward terms for the ablation named in ``run.ablation``."""
        a = self.run.ablation
        if a == "no_novelty":
            self.rewards.use_novelty = False
        elif a == "no_state_reward":
            self.rewards.use_state = False
        elif a == "no_vlm_rewards":
            self.rewards.use_progress = False
            self.rewards.use_semantic = False


def _parse_scalar(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw  # a bare string


def _set_field(section: Any, section_name: str, key: str, value: Any) -> None:
    hints = get_type_hints(type(section))
    if key not in hints:
        known = ", ".join(f.name for f in fields(section))
        raise ConfigError(f"unknown config field {section_name}.{key}; known: {known}")
    setattr(section, key, _coerce(value, hints[key], f"{section_name}.{key}"))


def _coerce(value: Any, hint: Any, name: str) -> Any:
    text = str(hint)
    if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
        if "None" in text:
            return None
        raise ConfigError(f"{name} cannot be empty")
    try:
        if "tuple" in text:
            if isinstance(value, str):
                value = [v for v in value.split(",") if v.strip()]
            inner = text.split("[", 1)[1]
            conv = float if inner.startswith("float") else int if inner.startswith("int") else str
            return tuple(conv(v.strip() if isinstance(v, str) else v) for v in value)
        if hint is bool or text.startswith("bool"):
            if isinstance(value, str):
                if value.lower() in ("true", "1", "yes", "on"):
                    return True
                if value.lower() in ("false", "0", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if hint is int or text.startswith("int"):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if hint is float or text.startswith("float"):
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: cannot use {value!r} ({text})") from None
