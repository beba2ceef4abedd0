"""A memory or archive whose name is near the 255-byte limit of a file name: the
temporaries and staging folders made beside it must still have names that fit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kgagent.config import Config
from kgagent.memory import Memory
from kgagent.memory.archive import export_memory, import_memory
from kgagent.memory.files import SIDE_NAME_MAX, side_name
from kgagent.memory.merge import merge_memories

from .conftest import ENC, e


def _memory(path: Path, axis: int) -> None:
    with Memory.open(path, Config(), encoder=ENC) as m:
        m.merge_or_create_state(e(axis))


def test_a_short_name_is_kept_and_a_long_one_is_shortened_to_its_own() -> None:
    assert side_name("memory") == "memory"
    assert side_name("m" * SIDE_NAME_MAX) == "m" * SIDE_NAME_MAX
    a, b = side_name("m" * 250), side_name("m" * 249 + "n")
    assert a != b and len(os.fsencode(a)) <= SIDE_NAME_MAX
    # a name of two-byte characters is cut between two of them: printable text stays so
    for n in (118, 119, 127):
        shown = side_name("é" * n)
        assert shown.encode("utf-8") and len(os.fsencode(shown)) <= SIDE_NAME_MAX, n
    odd = os.fsdecode(b"\xff" + "é".encode() * 120)  # bytes that are not UTF-8: kept as such
    assert len(os.fsencode(side_name(odd))) <= SIDE_NAME_MAX


@pytest.mark.parametrize("length", [240, 255])
def test_create_export_import_and_merge_with_names_near_the_limit(
    tmp_path: Path, length: int
) -> None:
    mem = tmp_path / ("m" * length)
    other = tmp_path / ("o" * length)
    _memory(mem, 0)  # created as a staging folder beside it, renamed into place
    _memory(other, 1)
    archive = tmp_path / ("a" * (length - len(".kgmem.tar.gz")) + ".kgmem.tar.gz")
    export_memory(mem, archive)
    export_memory(mem, archive, force=True)  # the temporary beside an existing archive
    imported = tmp_path / ("i" * length)
    import_memory(archive, imported)
    import_memory(archive, imported, force=True)  # a swap with the one in place
    merged = tmp_path / ("g" * length)
    s = merge_memories([mem, other], merged)
    assert s["states_created"] == 2, s
    with Memory.open(imported, Config(), read_only=True) as m:
        assert len(m.run_named("archive_export_state")) == 1
    # nothing left beside them but the five
    assert sorted(p.name[0] for p in tmp_path.iterdir()) == ["a", "g", "i", "m", "o"]
