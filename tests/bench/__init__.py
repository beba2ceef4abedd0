"""Tests of the bench package and of the benchmark scripts' arithmetic."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXPERIMENTS = Path(__file__).resolve().parents[2] / "benchmarks" / "experiments"


def load_experiment(name: str) -> ModuleType:
    """``benchmarks/experiments/NAME.py`` as a module (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"{name}_experiment", EXPERIMENTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod
