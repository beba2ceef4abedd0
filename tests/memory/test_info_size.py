"""`kgagent memory info` gives the memory's size as `du` measures it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kgagent.config import Config
from kgagent.memory import Memory

from .conftest import populate

MIB = 1 << 20  # du -m, du -h

pytestmark = pytest.mark.skipif(shutil.which("du") is None, reason="needs du")


def _du(path: Path, *opts: str) -> int:
    out = subprocess.run(["du", "-s", "-B1", *opts, str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[0])


def test_info_gives_the_size_on_disk_and_the_apparent_size_as_du_does(tmp_path) -> None:
    path = populate(tmp_path / "m").path
    # what made the two differ: small blobs (a block each), a file linked twice (once)
    blob = next(p for p in (path / "blobs").rglob("*.png"))
    (path / "backups").mkdir()
    os.link(blob, path / "backups" / "linked.png")
    for i in range(40):
        (path / "runs").mkdir(exist_ok=True)
        (path / "runs" / f"{i}.jsonl").write_text("{}\n")
    assert _du(path) > _du(path, "--apparent-size")  # 40 files of 3 bytes take 40 blocks
    with Memory.open(path, Config(), read_only=True) as m:
        info = m.info()
    assert "size_mb" not in info  # what it said was neither: file lengths, in 10^6 bytes
    assert info["disk_mib"] == round(_du(path) / MIB, 2)
    assert info["apparent_mib"] == round(_du(path, "--apparent-size") / MIB, 2)


def test_a_folder_is_measured_as_du_measures_it(tmp_path) -> None:
    from kgagent.memory.report import folder_size

    path = populate(tmp_path / "m").path
    os.link(path / "manifest.json", path / "manifest-linked.json")
    (path / "link").symlink_to(path / "graph.db")  # not followed
    assert folder_size(path) == (_du(path), _du(path, "--apparent-size"))
