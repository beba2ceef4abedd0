"""The default memory's place where the user has no home directory (a container's user id
without a password entry, and no $HOME): one line naming what to set, not a traceback."""

from __future__ import annotations

import pwd

import pytest

from kgagent.errors import ConfigError
from kgagent.paths import default_memory_path, resolve_memory_path


@pytest.fixture
def homeless(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HOME", "KGAGENT_MEMORY", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)

    def no_entry(uid: int):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", no_entry)


def test_no_home_is_one_line_naming_what_to_set(homeless, monkeypatch) -> None:
    with pytest.raises(ConfigError) as e:
        default_memory_path()
    assert str(e.value).startswith("no home directory for the default memory")
    assert "--memory DIR" in str(e.value) and "\n" not in str(e.value)
    monkeypatch.setenv("KGAGENT_MEMORY", "~/m")  # a ~ with no home to expand it to
    with pytest.raises(ConfigError, match=r"\$KGAGENT_MEMORY '~/m' starts with ~"):
        default_memory_path()
    with pytest.raises(ConfigError, match=r"--memory '~/x' starts with ~"):
        resolve_memory_path("~/x")


def test_without_a_home_an_absolute_place_still_works(homeless, monkeypatch, tmp_path) -> None:
    assert resolve_memory_path(tmp_path / "m") == tmp_path / "m"
    monkeypatch.setenv("KGAGENT_MEMORY", str(tmp_path / "e"))
    assert default_memory_path() == tmp_path / "e"
    monkeypatch.delenv("KGAGENT_MEMORY")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_memory_path() == tmp_path / "data" / "kgagent" / "memory"
