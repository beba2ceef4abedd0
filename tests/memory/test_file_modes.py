"""A memory's files and an export take the umask's permissions, as every file a process
creates does: the manifest, the blobs and the archive were made private (0600, from
``tempfile.mkstemp``) while the graph, the step logs and the journal followed the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kgagent.memory.archive import export_memory
from kgagent.memory.files import umask

from .conftest import populate


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode)
        for p in root.rglob("*")
        if p.is_file() and p.name != "writer.lock"
    }


@pytest.mark.parametrize("mask", [0o022, 0o077], ids=["022", "077"])
def test_every_file_of_a_memory_and_its_export_follows_the_umask(tmp_path: Path, mask: int) -> None:
    with _umask(mask):
        assert umask() == mask
        mem = populate(tmp_path / "m").path
        out = tmp_path / "m.kgmem.tar.gz"
        export_memory(mem, out)
    modes = _modes(mem)
    assert "manifest.json" in modes and any(k.startswith("blobs/") for k in modes), modes
    want = 0o666 & ~mask
    assert {k: v for k, v in modes.items() if v != want} == {}
    assert stat.S_IMODE(out.stat().st_mode) == want
