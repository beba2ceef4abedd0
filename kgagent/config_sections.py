"""The sections of :class:`kgagent.config.Config`: every field with its default and source.

Each field is declared with :func:`~kgagent.config_fields.param`: its default, where
the default comes from (``paper: <where>`` in the KG-Agent paper, or ``ours``), one
line of why, and the values it allows, which :meth:`Config.validate` enforces.
docs/config.md is generated from these declarations (``python -m kgagent.config_doc``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgagent.config_checks import ABLATIONS, positive_size, torch_device
from kgagent.config_fields import Section, param
from kgagent.errors import ConfigError


@dataclass
class MemoryConfig(Section):
    """Where experience lives and how states are merged (the SA-KG)."""

    path: str | None = param(
        None, "ours", "none: the user's data directory, one memory that every run adds to"
    )
    engine: str = param(
        "ladybug", "ours", "LadybugDB, Kùzu's maintained fork, measured faster", "ladybug | kuzu"
    )
    theta_merge: float | None = param(
        None,
        "paper: §4, Table 4",
        "cosine to merge; none: the encoder's (CLIP: the paper's 0.95; pixel: ours, 0.985)",
        "[-1, 1]",
    )
    theta_simi: float | None = param(
        None,
        "paper: §4, Table 4",
        "cosine of similarity; none: the encoder's (CLIP: the paper's 0.88; pixel: ours, 0.70)",
        "[-1, 1]",
    )
    alpha: float = param(0.7, "paper: Eq. 1, §4", "weight of visual change vs fitness", "[0, 1]")
    c0: float = param(
        5.0, "paper: Eq. 1, §4", "fitness sensitivity of a skill edge's weight", "> 0"
    )
    object_hash_distance: int = param(
        6, "ours", "largest Hamming distance of 64-bit pHashes of one object", "[0, 64]"
    )
    object_size_tolerance: float = param(
        0.25, "ours", "... and largest relative difference in width and height", ">= 0"
    )
    similar_weight_tolerance: float = param(
        0.005, "ours", "rewrite a similarity weight only when it moves more (fewer writes)", ">= 0"
    )
    query_threads: int = param(
        1,
        "ours",
        "threads per graph query: 1 has the lowest step latency; 0: every core; at most 256:"
        " the engine holds memory per thread (1,024 took 3 GB more)",
        "[0, 256]",
    )
    vector_flush_rows: int = param(
        64, "ours", "journal records per LanceDB append: fewer, larger appends", ">= 1"
    )
    compact_every: int = param(
        50, "ours", "compact the vectors after this many LanceDB appends; 0: on close", ">= 0"
    )
    disk_reserve_mb: float = param(
        64.0,
        "ours",
        "a writer stops cleanly when free disk space falls below this (MiB), before the engine fails",
        ">= 0",
    )
    commit_timeout_s: float = param(
        120.0,
        "ours",
        "a stuck engine call ends the run after this long (s); 0: no watchdog",
        ">= 0",
    )
    backup_on_migrate: bool = param(
        True, "ours", "a migration rewrites the memory in place; a copy makes it undoable"
    )
    similarity_edges: bool = param(
        True, "paper: §3.2", "merging and similarity edges; the no_similarity ablation: off"
    )


@dataclass
class PerceptionConfig(Section):
    """Screens to features and objects."""

    encoder: str = param(
        "auto", "ours", "auto: CLIP if clip_weights is set, else pixel", "auto | clip | pixel"
    )
    clip_model: str = param("ViT-B-32", "paper: §4", "the papers' visual encoder (open_clip name)")
    clip_weights: str | None = param(
        None, "ours", "a local file or an open_clip pretrained tag; none: no CLIP, no download"
    )
    device: str = param(
        "cpu",
        "ours",
        "torch device of CLIP and SAM: cpu runs everywhere",
        "naming a torch device: cpu, cuda, cuda:N (N a GPU's index), mps or xpu",
        check=torch_device,
    )
    segmenter: str = param(
        "auto", "ours", "auto: SAM if sam_checkpoint is set, else OpenCV", "auto | sam | opencv"
    )
    sam_model: str = param(
        "vit_b", "ours", "SAM's smallest model; vit_t: MobileSAM", "vit_b | vit_l | vit_h | vit_t"
    )
    sam_checkpoint: str | None = param(None, "ours", "SAM weights file; none: no SAM")
    sam_max_area_ratio: float = param(
        0.03, "ours", "masks over this share of the screen are panels, not controls", "(0, 1]"
    )
    sam_min_side: int = param(
        5, "ours", "masks thinner than this (px) are lines, not controls", ">= 0"
    )
    sam_min_texture_std: float = param(
        2.0, "ours", "masks whose grey std is below this are background", ">= 0"
    )
    dedup_center_distance: float = param(
        10.0, "ours", "segments whose centres are this close (px) are one", ">= 0"
    )
    max_objects: int = param(
        64,
        "ours",
        "objects kept per screen; bounds augmentation's A2; at most 4096: a 1920×1080 screen"
        " tiled with 32×32 px controls holds 2,025, and an array of this size is made per screen",
        "[1, 4096]",
    )
    grounding_threshold: float = param(
        0.8, "ours", "a template match (TM_CCOEFF_NORMED) below this: object absent", "[-1, 1]"
    )
    grounding_scales: tuple[float, ...] = param(
        (1.0, 0.9, 1.1, 0.8, 1.25),
        "ours",
        "scales tried when an object is not at its known size",
        "> 0",
        nonempty=True,
    )
    change_threshold: int = param(
        30, "paper: §3.2", "grey levels a pixel must change by to count in Δ", "[0, 254]"
    )
    clip_batch_size: int = param(32, "ours", "screens per CLIP forward pass", ">= 1")
    sam_points_per_side: int = param(
        32,
        "ours",
        "SAM's automatic mask grid (SAM's default); at most 256: n² prompts per screen,"
        " 65,536 already",
        "[1, 256]",
    )
    dedup_hash_distance: int = param(
        4, "ours", "overlapping segments within this pHash distance are one", "[0, 64]"
    )
    opencv_edge_threshold: int = param(
        24, "ours", "OpenCV segmenter: colour-gradient level that is an edge", ">= 0"
    )
    opencv_text_join: int = param(
        7,
        "ours",
        "OpenCV segmenter: gap (px) closed to join letters into a label; at most 256: wider"
        " joins columns, and the closing's cost grows with it",
        "[0, 256]",
    )
    resegment: bool = param(
        True, "ours", "segment a known state's changed screen again; off: once (cheaper with SAM)"
    )
    resegment_screens: int = param(
        64, "ours", "grey screens kept to tell whether a state's screen changed", ">= 1"
    )
    crop_cache: int = param(
        4096, "ours", "object reference crops kept in memory by the agent", ">= 1"
    )
    thumbnail_side: int = param(
        96, "ours", "longest side (px) of the thumbnail kept per state", ">= 1"
    )
    reader: str = param(
        "auto",
        "ours",
        "objects' text as labels (names, prompts, grounding); auto: OCR if RapidOCR imports",
        "auto | ocr | none",
    )
    reader_min_confidence: float = param(
        0.8, "ours", "recognitions below this confidence are not labels", "[0, 1]"
    )
    reader_cache: int = param(4096, "ours", "readings kept, by crop content", ">= 1")
    reader_whole_lines: bool = param(
        False,
        "ours",
        "experimental: a label the segmenter cut at a word gap is read as its whole line; off:"
        " exact labels rose, but civ turns fell (docs/perception.md 'Labels cut at a word gap')",
    )
    field_echo: bool = param(
        True,
        "ours",
        "typing that only shows up in a text field is no reaction of the program: neither an "
        "input's answer nor progress (zenity forms, xboard; docs/agent.md 'Text fields')",
    )


@dataclass
class InvocationConfig(Section):
    """Two-stage skill invocation (Algorithm 1, Eq. 4, 6, 7)."""

    m_samples: int = param(5, "paper: Eq. 4, Table 4", "M, HQ skills tried per step", ">= 1")
    r_good: float = param(
        2.0, "ours", "Alg. 1 line 12's early stop: progress and consistency, not one alone"
    )
    c1: float = param(
        5.0, "paper: Eq. 6, §4", "exploration constant of VLM-guided invocation", ">= 0"
    )
    base_exploration_utility: float = param(
        0.1, "paper: A.2", "the explore arm's utility before its UCT bonus", ">= 0"
    )
    exploration_trigger: float = param(
        0.9, "paper: A.2", "explore arm probability that makes the step pure exploration", "[0, 1]"
    )
    missing_object_penalty: float = param(
        1.0, "ours", "P(σ) of Eq. 6 = this × share of missing objects (A.2 gives no value)", ">= 0"
    )
    tau_start: float = param(
        1.0, "ours", "Eq. 7 temperature at zero selections (A.2 gives no value)", "> 0"
    )
    tau_min: float = param(
        0.1, "ours", "the lowest temperature: the softmax never becomes argmax", "> 0"
    )
    tau_decay: float = param(
        0.05, "ours", "τ = max(τ_min, τ_start / (1 + decay·N)), N the cluster's selections", ">= 0"
    )
    prob_clip: float = param(
        1e-6, "ours", "probabilities clipped to [clip, 1 − clip] (A.2's clipping)", "[0, 0.5)"
    )
    suspend_after_failures: int = param(
        3, "ours", "failures in a row that suspend a skill (A.2's suspended state)", ">= 1"
    )
    suspend_steps: int = param(50, "ours", "steps until a suspended skill is reconsidered", ">= 0")
    stale_steps: int = param(
        50, "ours", "steps a non-progressive skill is skipped from its state; 0: off", ">= 0"
    )


@dataclass
class AugmentConfig(Section):
    """Bottom-up skill augmentation (Algorithm 1, lines 18–25)."""

    k_max: int = param(
        3, "ours", "longest skill augmentation builds (Alg. 1 line 19's k_max)", ">= 1"
    )
    candidates_per_length: int = param(
        6, "ours", "new atomic actions tried per length k in one augmentation", ">= 1"
    )
    min_change: float = param(
        0.0002, "ours", "Δ below this changed nothing: above a caret, below a counter", "[0, 1]"
    )
    key_groups: tuple[str, ...] = param(
        ("letters", "digits", "arrows", "function", "punctuation", "whitespace", "navigation"),
        "ours",
        "A3: the keyboard a person has (kgagent/agent/inputs.py); a program answers few keys",
        "letters | digits | arrows | function | punctuation | whitespace | navigation",
    )
    hotkeys: bool = param(
        True, "ours", "A3: common modifier combinations (copy, paste, undo, …); none closes"
    )
    texts: tuple[str, ...] = param(
        ("hello", "123"), "ours", "A3: short strings typed at once, for text fields"
    )
    input_prior: float = param(
        2.0,
        "ours",
        "weight, in tries, of a group's response rate as the prior of an input never tried",
        "> 0",
    )
    residual_grid: int = param(
        6,
        "ours",
        "A3 background clicks on an n × n grid; at most 128: cells of 10 px on a 1280 px"
        " screen, and n² candidates per augmentation",
        "[1, 128]",
    )
    focus_max_area: float = param(
        0.5, "ours", "act first where the program reacted, unless more than this; 0: off", "[0, 1]"
    )
    focus_ahead_of_keys: bool = param(
        False,
        "ours",
        "after a click the program answered, actions where it reacted come before every key;"
        " off: only before the other clicks, and keys and clicks take turns by their response"
        " rates (docs/agent.md, Where the program reacted)",
    )
    focus_grow: int = param(
        8,
        "ours",
        "px by which changed pixels grow into places; at most 256: one reaction would cover"
        " most of a screen, and the dilation's kernel is (2n+1)² bytes",
        "[0, 256]",
    )
    focus_min_pixels: int = param(
        16, "ours", "places with fewer changed pixels are specks, not reactions", ">= 0"
    )
    rare_action_prob: float = param(
        0.15,
        "ours",
        "A2 share of double/right clicks, scrolls and drags among object actions",
        "[0, 1]",
    )


@dataclass
class RewardConfig(Section):
    """Eq. 9–11 and their ablation switches."""

    use_progress: bool = param(True, "paper: Eq. 9", "R_progress; off in no_vlm_rewards")
    use_semantic: bool = param(True, "paper: Eq. 9", "R_semantic; off in no_vlm_rewards")
    use_state: bool = param(True, "paper: Eq. 10", "R_state; off in no_state_reward and no_graph")
    use_novelty: bool = param(True, "paper: Eq. 11", "R_novel; off in no_novelty and no_graph")
    progress_reward: float = param(
        1.0, "ours", "R_progress of a progressive step (Eq. 9 has no scale)"
    )
    semantic_reward: float = param(
        1.0, "ours", "R_semantic when the change matches the description"
    )
    state_coef: float = param(1.0, "paper: Table 4", "R_state : R_novel = 1 : 1 was best", ">= 0")
    novel_coef: float = param(1.0, "paper: Table 4", "R_state : R_novel = 1 : 1 was best", ">= 0")
    novel_new: float = param(1.0, "paper: Eq. 11", "R_novel of a state new to the graph")
    novel_known: float = param(0.015, "paper: Eq. 11", "R_novel of a known state")
    r_prune: float = param(0.0, "ours", "Alg. 1 line 32: remove a skill whose R_total stays below")
    prune_window: int = param(
        3, "ours", "... for this many executions in a row: one bad draw removes nothing", ">= 1"
    )
    past_effects: int = param(
        8, "ours", "feature changes kept per skill for the semantic judgement", ">= 1"
    )
    fitness_decay: float = param(
        0.8, "ours", "φ ← decay·φ + (1 − decay)·R_total: bounded, follows recent evidence", "[0, 1)"
    )
    screen_novelty_change: float = param(
        0.0002, "ours", "a screen unlike every kept screen of its state by this Δ is new", "[0, 1]"
    )
    screen_novelty_cap: int = param(64, "ours", "screens kept per state per episode (FIFO)", ">= 1")
    screen_novelty_total_cap: int = param(
        512, "ours", "... and over all states: at most about 66 MB at 1920×1080", ">= 1"
    )
    screen_novelty_scale: int = param(
        4, "ours", "screens compared downscaled by this: a caret falls below Δ's threshold", ">= 1"
    )


@dataclass
class LibraryConfig(Section):
    """Pruning, refinement and clustering cadence."""

    prune_every: int = param(
        25, "ours", "steps between pruning at the library cap; 0: never", ">= 0"
    )
    max_library: int = param(
        1000, "ours", "prune while larger: bounds memory; a small cap churns good skills", ">= 1"
    )
    prune_c: float = param(
        0.5,
        "ours",
        "UCB constant of pruning (A.2's C of step 5; the paper's pruning, Eq. 6's C1 = 5, "
        "pruned the most-used skills first)",
        ">= 0",
    )
    refine_below: int = param(
        40, "ours", "Alg. 1 line 35: refine (Eq. 8) only while the library is smaller", ">= 0"
    )
    cluster_every: int = param(
        10, "ours", "steps between clustering new skills; 0: only when no cluster exists", ">= 0"
    )


@dataclass
class DesktopConfig(Section):
    """The real-desktop driver."""

    window: str | None = param(
        None, "ours", "bind to the window with this title, class:NAME, title:TEXT or pid:N"
    )
    region: tuple[int, int, int, int] | None = param(
        None,
        "ours",
        "bind to this part of the screen (px)",
        "x, y, w, h with w, h > 0",
        check=positive_size,
    )
    settle_timeout_s: float = param(
        2.0, "ours", "longest wait (s) for the screen to settle after an action", ">= 0"
    )
    settle_interval_s: float = param(
        0.01,
        "ours",
        "seconds between screenshots while settling (a 1280×720 capture takes about 4 ms with python-xlib, 9 ms with Pillow)",
        "> 0",
    )
    settle_still_s: float = param(
        0.04,
        "ours",
        "a screen that reacted and then held still this long (s) has settled: over a frame at"
        " 30 fps",
        "> 0",
    )
    settle_quiet_s: float = param(
        0.1,
        "ours",
        "an input that shows no reaction within this long (s) changed nothing: three frames of a"
        " 30 fps program",
        "> 0",
    )
    settle_reaction_margin: float = param(
        1.5,
        "ours",
        "the quiet wait becomes at least this × the 90th percentile of the program's recent"
        " reactions (input to first change), so a program that draws less often than"
        " settle_quiet_s is waited for; 0: off (docs/agent.md, Settling)",
        ">= 0",
    )
    capture_timeout_s: float = param(
        10.0,
        "ours",
        "a screenshot the X display has not answered in this long (s) is an error: a capture"
        " takes milliseconds, so the display has hung",
        "> 0",
    )
    action_pause_s: float = param(
        0.0,
        "ours",
        "pause (s) after each input event; 0: the settling wait already separates actions",
        ">= 0",
    )
    noise_probe_s: float = param(
        1.0,
        "ours",
        "watch the idle target this long (s) for noise before acting, twice if it moved (noise"
        " recurs; a late first draw does not); 0: off",
        ">= 0",
    )
    noise_margin: float = param(
        2.0, "ours", "the 'nothing changed' floors become at least this × the idle Δ", ">= 1"
    )
    noise_reprobe_after: int = param(
        2,
        "ours",
        "watch the idle target again after this many inputs in a row whose screen never held"
        " still within settle_timeout_s (noise that began later: Crafter's night, docs/"
        "benchmarks.md); its settle tolerance follows, the floors stay; 0: never",
        ">= 0",
    )
    launch: str | None = param(
        None, "ours", "start this command, bind to its first window, restart it when it exits"
    )
    display: str | None = param(
        None,
        "ours",
        "X display; none: $DISPLAY, else a private Xvfb when launching; 'new': a private "
        "Xvfb for the launched program even with $DISPLAY set (needs desktop.launch)",
    )
    screen_size: tuple[int, int] = param(
        (1280, 800),
        "ours",
        "size (px) of a private Xvfb's screen; at most 8192: past 8K UHD (7680 × 4320), each"
        " capture already 256 MiB",
        "[64, 8192]",
    )
    launch_timeout_s: float = param(
        20.0, "ours", "longest wait (s) for a launched program's first window", "> 0"
    )
    stop_timeout_s: float = param(5.0, "ours", "SIGTERM, then SIGKILL after this long (s)", ">= 0")
    start_failures: int = param(
        3, "ours", "a program that exits at start-up this many times in a row is an error", ">= 1"
    )
    program_log: str | None = param(
        None, "ours", "file for the launched program's output; none: beside the step log"
    )
    allow_closing_keys: bool = param(
        False,
        "ours",
        "send keys that close windows or log out (alt+f4, ctrl+q, ctrl+c, ctrl+alt+…)",
    )
    refuse_grabbed_input: bool = param(
        True,
        "ours",
        "send nothing while another program holds the pointer or keyboard with an active "
        "grab (it would get the input); false for a target that grabs its own pointer",
    )


#: gymnasium.make's keywords that the ``gym:ID`` adapter sets itself
GYM_OWN_KWARGS = {
    "render_mode": "the adapter renders to an array (render_mode is its own)",
    "max_episode_steps": "set gym.max_episode_steps instead",
}


def gym_kwargs(text: str | None) -> dict[str, Any]:
    """``gym.kwargs`` as the keywords it holds: a TOML inline table (``{frameskip = 1}``,
    as ``--set`` reads values; its braces may be left out: ``frameskip=1``) or a JSON
    object (``{"frameskip": 1}``). Text that is neither, or that sets a keyword the
    adapter owns, is one :class:`ConfigError`. A string field, since a config value is a
    scalar or a list: in a config file, ``kwargs = "{frameskip = 1}"``."""
    import json

    from kgagent.config_fields import tomllib  # tomli before Python 3.11

    if text is None or not text.strip():
        return {}
    table: Any = None
    inline = text.strip() if text.strip().startswith("{") else f"{{{text}}}"
    try:
        table = tomllib.loads(f"v = {inline}")["v"]
    except tomllib.TOMLDecodeError:
        try:
            table = json.loads(text)
        except json.JSONDecodeError:
            pass
    if not isinstance(table, dict):
        raise ConfigError(
            f"gym.kwargs = {text!r}: must be a table of gymnasium.make's keywords, as TOML "
            '{frameskip = 1, repeat_action_probability = 0.0} or JSON {"frameskip": 1}'
        )
    for key, why in GYM_OWN_KWARGS.items():
        if key in table:
            raise ConfigError(f"gym.kwargs sets {key}: {why}")
    return table


@dataclass
class GymConfig(Section):
    """Gymnasium environments and Crafter as pixel programs (``--env gym:ID``)."""

    size: tuple[int, int] | None = param(
        None,
        "ours",
        "screen (px) the agent sees; none: Crafter 600 × 600 like its window, others ≥ 400 px;"
        " at most 8192: past 8K UHD (7680 × 4320), each frame already 192 MiB",
        "[16, 8192]",
    )
    max_episode_steps: int | None = param(
        None, "ours", "episode length in environment steps; none: the environment's own", ">= 1"
    )
    kwargs: str | None = param(
        None,
        "ours",
        "the environment's own options, passed to gymnasium.make (ALE: frameskip,"
        " repeat_action_probability, mode, difficulty); none: its defaults",
        'holding a table: {frameskip = 1} or frameskip=1 (TOML), {"frameskip": 1} (JSON); not'
        " render_mode (the adapter's) or max_episode_steps (gym.max_episode_steps)",
        check=lambda text: gym_kwargs(text) is not None,
    )


@dataclass
class RunConfig(Section):
    """One `kgagent play` run."""

    env: str = param("cardgame", "ours", "the built-in card game needs no display and no program")
    steps: int = param(200, "ours", "a short first run; the papers' episode is 500 steps", ">= 0")
    episode_limit: int = param(500, "paper: §4, A.3", "an episode ends after 500 steps", ">= 1")
    seed: int = param(
        0,
        "ours",
        "seeds the game and the agent: the same run step for step (but ids' random part, times)",
        ">= 0",
    )
    ablation: str = param(
        "full",
        "paper: Table 3",
        "Table 3's ablations (w/o R_novel & R_state: rewards.use_novelty and use_state false), "
        "no_graph (the Bottom-Up Agent, the papers' baseline) and random",
        " | ".join(ABLATIONS),
    )
    restart: bool | None = param(
        None, "ours", "start the next episode when one ends; none: the environment decides"
    )
    record: str | None = param(None, "ours", "folder for a screenshot per step; none: off")
    log_dir: str | None = param(None, "ours", "where the step log goes; none: <memory>/runs")
