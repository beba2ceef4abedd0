"""queries/, migrations/ and schema/ ship inside the package and are found outside the repo."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
from importlib import resources
import kgagent
from kgagent.memory import migrations, queries
files = lambda pkg: sorted(e.name for e in resources.files(pkg).iterdir() if e.name.endswith(".cypher"))
print(json.dumps({
    "kgagent": kgagent.__file__,
    "queries": files("kgagent.queries"),
    "schema": files("kgagent.schema"),
    "migrations": [m.version for m in migrations.available()],
    "named": len(queries.load_all()),
    "query_file": str(resources.files("kgagent.queries")),
    "cli": __import__("kgagent.cli.query", fromlist=["x"]).__file__,
}))
"""


def test_installed_package_finds_queries_migrations_schema(tmp_path: Path) -> None:
    # Build from a copy of the sources, so that no build/ folder lands in the repository.
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("kgagent", "cli", "queries", "schema", "migrations"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, src / name)
    target = tmp_path / "site"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-compile",
            "--quiet",
            "--target",
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    if build.returncode != 0 and "No module named pip" in build.stderr:
        pytest.skip("pip is not available in this interpreter")
    assert build.returncode == 0, build.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    res = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout)
    assert got["kgagent"].startswith(str(target))  # the installed copy, not the repository
    assert got["query_file"].startswith(str(target)) and got["cli"].startswith(str(target))
    want = sorted(p.name for p in (REPO / "queries").glob("*.cypher"))
    assert got["queries"] == want and {"archive.cypher", "_transaction.cypher"} <= set(want)
    assert got["schema"] == ["schema.cypher"]
    assert got["migrations"] == list(
        range(1, len(list((REPO / "migrations").glob("0*.cypher"))) + 1)
    )
    # Every named query of the repository's files loads from the installed copy.
    declared = sum(
        line.strip().startswith("// name:")
        for f in (REPO / "queries").glob("*.cypher")
        for line in f.read_text(encoding="utf-8").splitlines()
    )
    assert got["named"] == declared and declared > 0
