"""The data of a grid file (:mod:`~kgagent.bench.spec`): its methods, judges,
experiments and cells, and the cell's digest and configuration."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgagent.brain.endpoint import shown_url
from kgagent.config import Config

#: Bumped when what a cell runs for the same spec changes (invalidates finished cells).
SPEC_VERSION = 1


@dataclass(frozen=True)
class Method:
    """A method: an agent ablation (``run.ablation``) plus overrides, or a harness baseline."""

    name: str
    ablation: str = "full"
    baseline: str | None = None
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judge:
    """Who answers the brain's roles: the offline brain, or an OpenAI-compatible server."""

    name: str
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    overrides: tuple[str, ...] = ()

    def brain_overrides(self) -> list[str]:
        if self.base_url is None:
            return ["brain.kind=offline", *self.overrides]
        out = ["brain.kind=vlm", f"brain.base_url={self.base_url}"]
        if self.model:
            out.append(f"brain.model={self.model}")
        if self.api_key_env:
            out.append(f"brain.api_key_env={self.api_key_env}")
        return out + list(self.overrides)


@dataclass
class Cell:
    """One memory of the grid: its rounds, their seeds and the overrides of every round.

    Plain data (it travels to worker processes and Ray tasks as a dict, in memory); ``key``
    is its folder name in the results, ``digest`` the hash a finished cell records. A
    password in a URL of its overrides or ``base`` stays here, to run; the results folder
    gets :meth:`shown`, where it is masked.
    """

    experiment: str
    env: str
    method: str
    judge: str
    seed: int
    series: int
    steps: int
    run_seeds: list[int]
    overrides: list[str]  # applied after ``base``; the round's run.seed comes last
    baseline: str | None = None
    base: dict[str, Any] = field(default_factory=dict)  # a --config file's tables

    @property
    def rounds(self) -> int:
        return len(self.run_seeds)

    @property
    def key(self) -> str:
        env = re.sub(r"[^A-Za-z0-9_-]+", "-", self.env).strip("-")
        return f"{self.experiment}.{env}.{self.method}.{self.judge}.seed{self.seed}.series{self.series}"

    @property
    def digest(self) -> str:
        """A hash of everything that decides what the cell plays (not where it is stored),
        of :meth:`shown`: a URL's password neither changes it nor is hashed into it."""
        d = {"spec_version": SPEC_VERSION, **self.shown()}
        text = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def config(self, round_index: int, extra: list[str] | None = None) -> Config:
        """The configuration of round ``round_index`` (validated)."""
        cfg = Config()
        cfg.update(self.base)
        for item in [*self.overrides, f"run.seed={self.run_seeds[round_index]}", *(extra or [])]:
            cfg.set_dotted(item)
        cfg.validate()
        return cfg

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def shown(self) -> dict[str, Any]:
        """The cell as ``cell.json`` records it: a password in any URL masked
        (``http://alice:***@host/v1``); the API key is never in it (``brain.api_key_env``
        names the variable that holds it)."""
        return shown_values(asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        return cls(**d)


@dataclass
class Experiment:
    name: str
    envs: list[str]
    methods: list[str]
    judges: list[str]
    seeds: list[int]
    series: int
    rounds: int
    steps: int
    reference: str | None
    overrides: list[str] = field(default_factory=list)  # the grid's ``set``, then its own
    series_stride: int = 100
    round_stride: int = 1
    cells: list[Cell] = field(default_factory=list)


@dataclass
class Grid:
    """A parsed grid file: experiments and their cells, and how to report them."""

    name: str
    path: Path
    text: str
    experiments: list[Experiment]
    methods: dict[str, Method]
    judges: dict[str, Judge]
    metrics: list[str]
    bootstrap: int
    confidence: float
    out: Path | None
    description: str = ""

    @property
    def cells(self) -> list[Cell]:
        return [c for e in self.experiments for c in e.cells]


def shown_values(v: Any) -> Any:
    """``v`` (strings, lists and dicts of them) with a password in any URL masked."""
    if isinstance(v, str):
        return shown_url(v)
    if isinstance(v, dict):
        return {k: shown_values(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [shown_values(x) for x in v]
    return v
