"""A merge or an import refused for lack of space says so in one line, of the user's path.

No small file system is mounted: the free space diskspace reads is patched, and a copy
that meets a full disk is made to raise ``ENOSPC`` / ``EDQUOT``.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from kgagent.errors import KGAgentError
from kgagent.memory import diskspace, merge_place
from kgagent.memory.archive import export_memory, import_memory
from kgagent.memory.diskspace import DiskSpaceError, SpaceGuard
from kgagent.memory.merge import merge_memories
from kgagent.memory.merge_place import work_prefix

from .conftest import populate, tree_hash

MIB = 1 << 20


def free_space(monkeypatch: pytest.MonkeyPatch, free: int, low_under: str = "") -> None:
    """Report ``free`` bytes free (only under paths holding ``low_under``; plenty elsewhere)."""

    def fake(path: Path) -> int:
        return free if low_under in str(path) else 1 << 40

    monkeypatch.setattr(diskspace, "free_bytes", fake)


def one_line(e: BaseException) -> str:
    msg = str(e)
    assert "\n" not in msg
    return msg


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.fixture
def memories(tmp_path: Path) -> tuple[Path, Path]:
    """A source memory and a destination memory of the same encoder."""
    return populate(tmp_path / "M").path, populate(tmp_path / "small" / "P").path


def test_a_merge_onto_a_nearly_full_disk_is_refused_before_the_copy(
    memories: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dest = memories
    before = tree_hash(dest)
    need = merge_place.copy_size(dest)
    assert need > 0
    free_space(monkeypatch, int(7.2 * MIB))

    def no_copy(*_a: object) -> None:
        raise AssertionError("the merge began copying the destination")

    monkeypatch.setattr(merge_place.DestinationGuard, "copy_graph", no_copy)
    with pytest.raises(DiskSpaceError) as info:
        merge_memories([src], dest)
    msg = one_line(info.value)
    assert msg.startswith(f"only 7.20 MiB free on the file system of {dest}, below the ")
    assert f"{diskspace.mib(need)} to copy the memory and the 64.00 MiB reserve" in msg
    assert "the merge changed nothing there" in msg
    assert work_prefix(dest) not in msg and "committed" not in msg
    assert tree_hash(dest) == before
    assert leftovers(dest.parent) == []


@pytest.mark.parametrize(
    ("code", "words"), [(errno.ENOSPC, "No space left on device"), (errno.EDQUOT, "quota")]
)
def test_a_disk_filling_during_the_copy_is_one_line_and_the_destination_is_unchanged(
    memories: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, code: int, words: str
) -> None:
    src, dest = memories
    before = tree_hash(dest)
    free_space(monkeypatch, 1 << 40)

    def full(self: merge_place.DestinationGuard, to: Path) -> None:
        to.write_bytes(b"\0" * 4096)  # part of the copy was written
        raise OSError(code, words)

    monkeypatch.setattr(merge_place.DestinationGuard, "copy_graph", full)
    with pytest.raises(KGAgentError) as info:
        merge_memories([src], dest)
    msg = one_line(info.value)
    assert msg.startswith(f"the merge changed nothing at {dest}: ")
    assert f"in {dest.parent} failed" in msg and words in msg and "Free some space" in msg
    assert tree_hash(dest) == before
    assert leftovers(dest.parent) == []


def test_a_merge_refused_for_space_later_on_names_the_destination_not_its_work_folder(
    memories: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, dest = memories
    archive = tmp_path / "M.tar.gz"
    export_memory(src, archive)
    before = tree_hash(dest)
    free_space(monkeypatch, 5 * MIB, low_under=work_prefix(dest))  # room beside, not inside
    with pytest.raises(DiskSpaceError) as info:
        merge_memories([archive], dest)  # staging the archive meets the reserve
    msg = one_line(info.value)
    assert msg.startswith(f"only 5.00 MiB free on the file system of {dest}, below the 64.00")
    assert "the merge changed nothing there" in msg
    assert work_prefix(dest) not in msg and ".import-" not in msg and "committed" not in msg
    assert tree_hash(dest) == before
    assert leftovers(dest.parent) == []


@pytest.mark.parametrize("replace", [False, True])
def test_an_import_refused_for_space_names_the_target_not_its_work_folder(
    memories: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replace: bool
) -> None:
    src, existing = memories
    archive = tmp_path / "ex1.tar.gz"
    export_memory(src, archive)
    target = existing if replace else existing.parent / "I"
    before = tree_hash(existing)
    free_space(monkeypatch, int(19.39 * MIB))
    with pytest.raises(DiskSpaceError) as info:
        import_memory(archive, target, force=replace)
    msg = one_line(info.value)
    assert msg == (
        f"only 19.39 MiB free on the file system of {target}, below the 64.00 MiB reserve; "
        "the import wrote nothing there. Free some space (or import into a folder on a "
        "larger disk) and run again"
    )
    assert tree_hash(existing) == before
    assert not (existing.parent / "I").exists()
    assert leftovers(existing.parent) == []


def test_plays_wording_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    free_space(monkeypatch, int(19.39 * MIB))
    with pytest.raises(DiskSpaceError) as info:
        SpaceGuard(tmp_path, diskspace.DEFAULT_RESERVE_BYTES).check()
    assert str(info.value) == (
        f"only 19.39 MiB free on the file system of {tmp_path}, below the 64.00 MiB reserve; "
        "stopped before the disk fills (everything committed is kept). Free some space, or "
        "move the memory, and run again"
    )


def _archived(memories: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """The source memory's archive, and the other memory (whose folder imports go to)."""
    src, existing = memories
    archive = tmp_path / "ex.tar.gz"
    export_memory(src, archive)
    return archive, existing


def test_an_import_unpacks_against_the_configured_reserve(
    memories: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memory.disk_reserve_mb` holds for the unpacking too, not only the default 64 MiB."""
    from kgagent.config import Config

    archive, existing = _archived(memories, tmp_path)
    free_space(monkeypatch, 100 * MIB, low_under=".import-")
    cfg = Config()
    cfg.memory.disk_reserve_mb = 200
    target = existing.parent / "I"
    with pytest.raises(DiskSpaceError) as info:
        import_memory(archive, target, cfg)
    assert one_line(info.value).startswith(
        f"only 100.00 MiB free on the file system of {target}, below the 200.00 MiB reserve; "
        "the import wrote nothing there"
    )
    assert not target.exists() and leftovers(existing.parent) == []


def test_a_disk_filling_while_an_archive_unpacks_names_the_target(
    memories: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgagent.memory import archive_verify

    archive, existing = _archived(memories, tmp_path)

    def full(path, mode="r", *args, **kwargs):  # noqa: ANN001, ANN202
        if "w" in mode:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return open(path, mode, *args, **kwargs)

    monkeypatch.setattr(archive_verify, "open", full, raising=False)
    target = existing.parent / "I"
    with pytest.raises(DiskSpaceError) as info:
        import_memory(archive, target)
    msg = one_line(info.value)
    # the disk here has room: the figures would say "below the reserve" of plenty free
    assert msg.startswith(f"the file system of {target} has no room left although ")
    assert "the import wrote nothing there" in msg
    assert ".import-" not in msg
    assert not target.exists() and leftovers(existing.parent) == []
