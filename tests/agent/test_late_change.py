"""A live target's screen that changed after the last action settled (a reaction later
than the settle wait, or the program's own motion) is seen before the next step or
execution and credited to no input (`Screen.catch_up`, `StepRecord.late_changes`)."""

from __future__ import annotations

import numpy as np

from kgagent.actions import Action, Operation
from kgagent.agent.executor import execute
from kgagent.agent.loop import Agent
from kgagent.agent.screen import Screen
from kgagent.brain.offline import OfflineBrain
from kgagent.runlog import summarise

from .toy import A, T, ToyEnv


class LiveToy(ToyEnv):
    """The toy as a real program: its screen may change with no action (``panel``)."""

    live = True


class LateToy(LiveToy):
    """Draws what an input changed only after the settle wait has ended: the screen a
    step returns is the old one, and the next capture shows the change."""

    pending: tuple[bool, bool, int] | None = None

    def step(self, action: Action):
        drawn = (self.panel, self.selected, self.fired)
        super().step(action)
        self.pending = (self.panel, self.selected, self.fired)
        self.panel, self.selected, self.fired = drawn  # not drawn yet
        return ToyEnv.observe(self), 0.0, False, False, {}

    def observe(self) -> np.ndarray:
        if self.pending is not None:
            (self.panel, self.selected, self.fired), self.pending = self.pending, None
        return super().observe()


def test_a_change_since_the_last_action_is_seen_by_the_next_look() -> None:
    env = LiveToy()
    env.reset()
    screen = Screen(env)
    first = screen.observe()
    screen.begin_step()
    assert screen.late_changes == 0 and screen.observe() is first  # cached frame kept
    env.panel = True  # the program draws late, with no input of this step
    assert screen.catch_up() is True and screen.late_changes == 1
    assert not np.array_equal(screen.observe(), first)
    screen.begin_step()
    assert screen.late_changes == 0  # the count is per step


def test_a_change_below_the_floor_keeps_the_cached_frame() -> None:
    env = LiveToy()
    env.reset()
    screen = Screen(env, change_floor=0.5)  # half the screen must change to count
    first = screen.observe()
    env.selected = True  # a ring around B: a few pixels
    assert screen.catch_up() is False and screen.observe() is first


def test_a_change_by_the_program_ends_the_remembered_reaction() -> None:
    env = LiveToy()
    env.reset()
    screen = Screen(env)
    screen.observe()
    screen.act(Action("click", x=A[0] + 5, y=A[1] + 5))  # A opens the panel
    assert screen.last_reaction is not None
    assert screen.catch_up() is False and screen.last_reaction is not None  # still so
    env.selected = not env.selected  # the program draws something no input asked for
    assert screen.catch_up() is True and screen.last_reaction is None


def test_a_program_that_changes_only_when_acted_on_is_not_captured_again() -> None:
    env = ToyEnv()
    env.reset()
    screen = Screen(env)
    first = screen.observe()
    env.panel = True
    assert screen.catch_up() is False and screen.observe() is first


def test_an_execution_after_a_late_reaction_is_not_credited_with_it(cfg) -> None:
    """Click A (its panel drawn after the wait), then a click on T, which does nothing:
    T's execution starts from the screen with the panel and changes nothing."""
    env = LateToy()
    env.reset()
    screen = Screen(env)
    screen.observe()

    def click(box: tuple[int, int, int, int]) -> Operation:
        return Operation("click", point=(box[0] + 5, box[1] + 5))

    a = execute([click(A)], screen, None, cfg)  # type: ignore[arg-type]
    assert a.change == 0.0  # its reaction came after the wait
    t = execute([click(T)], screen, None, cfg)  # type: ignore[arg-type]
    assert t.change == 0.0 and screen.late_changes == 1  # the panel is nobody's
    assert env.panel


def test_the_step_log_counts_changes_after_an_action_had_settled(
    cfg, memory, encoder, segmenter
) -> None:
    env = LiveToy()
    env.reset()
    screen = Screen(env)
    agent = Agent(cfg, memory, encoder, segmenter, OfflineBrain(), np.random.default_rng(0))
    first = agent.step(screen)
    env.panel = not env.panel  # a change no input of the next step made
    second = agent.step(screen)
    third = agent.step(screen)
    assert (first.late_changes, second.late_changes, third.late_changes) == (0, 1, 0)
    assert "capture" in second.times_ms  # the capture is part of the step's time
    records = [r.to_dict() for r in (first, second, third)]
    s = summarise(
        records,
        env="toy",
        seed=0,
        ablation="full",
        stats={},
        truth={},
        stopped="steps",
        duration_s=1.0,
    )
    assert s.late_changes == 1 and "late changes" in s.format_table()


def test_what_changes_during_a_noise_watch_is_no_inputs_doing() -> None:
    """The noise watch that follows a row of unsettled inputs takes its time; a change the
    program draws meanwhile is caught up at once (a late change, the reaction ended), not
    credited to the next input, and the input's own screen is still what it returns."""
    env = LiveToy()
    env.reset()
    screen = Screen(env)
    screen.observe()
    watched: list[int] = []

    def watch() -> None:
        watched.append(env.unsettled)
        env.unsettled = 0
        env.selected = not env.selected  # the program draws during the watch

    screen.rewatch_after(2, watch)
    env.unsettled = 1
    screen.act(Action("click", x=A[0] + 5, y=A[1] + 5))  # one short of the row
    assert watched == [] and screen.last_reaction is not None
    env.unsettled = 2
    after = screen.act(Action("click", x=A[0] + 5, y=A[1] + 5))  # A closes the panel
    assert watched == [2]
    assert screen.late_changes == 1 and screen.last_reaction is None
    assert not np.array_equal(screen.observe(), after)  # the screen as it is now
