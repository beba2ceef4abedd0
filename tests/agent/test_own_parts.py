"""Parts of one's own (an ``Env``, a reader, an encoder) that break their contract are
told so in one line naming the part, the call and what it should give."""

from __future__ import annotations

import pytest

from kgagent.errors import ConfigError, EncoderMismatchError, EnvironmentError_
from kgagent.perception.encoders import PixelEncoder
from kgagent.perception.reader import Reading
from kgagent.runlog_read import read_log

from .toy import ToyEnv, toy_runner

STEP = "step(action) returns (obs, reward, terminated, truncated, info)"
READER = (
    "a reader has an identity string and read(crops) -> list[Reading], one Reading per "
    "crop, in order"
)


class StepReturns(ToyEnv):
    """The toy whose ``step`` returns ``out`` (None, Gym's old four-tuple)."""

    def __init__(self, out: str) -> None:
        super().__init__()
        self.out = out

    def step(self, action):
        obs, reward, term, trunc, info = super().step(action)
        return None if self.out == "none" else (obs, reward, term or trunc, info)


@pytest.mark.parametrize(
    "out, said",
    [
        ("none", "None from step(): " + STEP),
        ("gym4", f"a tuple of 4 values from step(): {STEP} (Gym's old (obs, reward, done, info)?)"),
    ],
)
def test_a_step_that_returns_other_than_five_values_is_one_line(cfg, tmp_path, out, said) -> None:
    with pytest.raises(EnvironmentError_) as e:
        toy_runner(cfg, tmp_path / out, StepReturns(out)).run(3)
    assert str(e.value) == f"environment 'toy' returned {said}"


class Boom(ToyEnv):
    def step(self, action):
        if self.steps >= 2:
            raise RuntimeError("boom in my step")
        return super().step(action)


def test_an_exception_in_step_names_the_env_the_call_and_its_type(cfg, tmp_path) -> None:
    mem = tmp_path / "mem"
    with pytest.raises(EnvironmentError_) as e:
        toy_runner(cfg, mem, Boom()).run(10)
    said = "environment 'toy' failed in step(): RuntimeError: boom in my step"
    assert str(e.value) == said
    assert isinstance(e.value.__cause__, RuntimeError)  # --debug shows where
    (log,) = (mem / "runs").glob("*.jsonl")
    assert read_log(log)[2]["error"] == said


class WrongSize(ToyEnv):
    @property
    def size(self):
        return (640, 480)


def test_a_first_screen_of_another_size_than_size_is_one_line(cfg, tmp_path) -> None:
    with pytest.raises(EnvironmentError_) as e:
        toy_runner(cfg, tmp_path / "m", WrongSize()).run(3)
    assert str(e.value) == (
        "environment 'toy' gave a screen 240 wide and 160 high, but its size is (640, 480): "
        "size is (width, height) of its screens in pixels"
    )


class ShortReader:
    identity = "short"

    def read(self, crops):
        return []


class NoneReader:
    identity = "none-returner"

    def read(self, crops):
        return None


class StrReader:
    identity = "str"

    def read(self, crops):
        return ["hello" for _ in crops]


class NoIdReader:
    def read(self, crops):
        return [Reading() for _ in crops]


@pytest.mark.parametrize(
    "reader, said",
    [
        (ShortReader(), "reader 'short' returned 0 readings for 3 crops"),
        (NoneReader(), "reader 'none-returner' returned None for 3 crops"),
        (StrReader(), "reader 'str' returned a list holding a str for 3 crops"),
    ],
)
def test_a_reader_that_returns_other_than_its_readings_is_one_line(
    cfg, tmp_path, reader, said
) -> None:
    with pytest.raises(ConfigError) as e:
        toy_runner(cfg, tmp_path / "m", ToyEnv(), reader=reader).run(3)
    assert str(e.value) == f"{said}: {READER}"


def test_a_reader_without_identity_is_refused_before_the_run(cfg, tmp_path) -> None:
    mem = tmp_path / "m"
    with pytest.raises(ConfigError) as e:
        toy_runner(cfg, mem, ToyEnv(), reader=NoIdReader()).run(3)
    assert str(e.value) == f"reader NoIdReader has no identity: {READER}"
    assert not mem.exists()  # refused before the run: the memory it made is gone


class BadDim:
    """Declares 10 dimensions, returns the pixel encoder's."""

    identity = "baddim:v1"
    dim = 10

    def __init__(self) -> None:
        self._pixel = PixelEncoder()
        self.default_thresholds = self._pixel.default_thresholds

    def encode(self, images):
        return self._pixel.encode(images)


def test_an_encoder_returning_other_than_its_dim_is_named(cfg, tmp_path) -> None:
    n = PixelEncoder().dim
    with pytest.raises(EncoderMismatchError) as e:
        toy_runner(cfg, tmp_path / "m", ToyEnv(), encoder=BadDim()).run(2)
    assert str(e.value) == (
        f"encoder 'baddim:v1' returned {n} values for one screen but declares dim 10: "
        "encode(images) returns an (n, dim) array, one row per image"
    )


class RaisingReader:
    identity = "raiser"

    def read(self, crops):
        raise ValueError("my model is not loaded")


def test_a_reader_that_raises_is_one_line_naming_it(cfg, tmp_path) -> None:
    with pytest.raises(ConfigError) as e:
        toy_runner(cfg, tmp_path / "m", ToyEnv(), reader=RaisingReader()).run(3)
    said = "reader 'raiser' failed in read(): ValueError: my model is not loaded"
    assert str(e.value) == said and isinstance(e.value.__cause__, ValueError)


class ResetBoom(ToyEnv):
    def reset(self, seed=None):
        raise OSError("the level file is missing")


def test_an_exception_in_reset_names_the_env_and_the_call(cfg, tmp_path) -> None:
    mem = tmp_path / "m"
    with pytest.raises(EnvironmentError_) as e:
        toy_runner(cfg, mem, ResetBoom()).run(3)
    assert str(e.value) == "environment 'toy' failed in reset(): OSError: the level file is missing"
    assert not mem.exists()  # it never started: the memory it made is gone
