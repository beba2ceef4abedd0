"""benchmarks/memory_scale.py builds its synthetic memory with the schema of today's migrations."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_scale.py"


def test_a_small_memory_scale_run_loads_every_row_and_times_every_operation(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("KGAGENT_ENGINE", os.environ.get("KGAGENT_ENGINE", "ladybug"))
    # The benchmark puts benchmarks/ first on sys.path, where its crafter.py would shadow
    # the game for every later test: it gets a copy, and the test's end restores the list.
    monkeypatch.setattr(sys, "path", [*sys.path])
    spec = importlib.util.spec_from_file_location("memory_scale_benchmark", BENCH)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)  # imports benchmarks/_synthetic.py
    finally:
        sys.modules.pop("_synthetic", None)
    out = tmp_path / "figures.json"
    rc = mod.main(
        [
            "--states",
            "200",
            "--similar",
            "300",
            "--skill-edges",
            "300",
            "--skills",
            "20",
            "--samples",
            "2",
            "--no-naive",
            "--no-archive",
            "--workdir",
            str(tmp_path / "w"),
            "--json",
            str(out),
        ]
    )
    assert rc == 0  # the run itself checks that every synthetic row reached the graph
    report = json.loads(out.read_text())
    assert report["synthetic"]["states"] == 200 and report["synthetic"]["skills"] == 20
    for op in ("merge_or_create (merge)", "per-step (observation merges)"):
        p50, p95 = report["ops_ms"][op]
        assert 0 < p50 <= p95
