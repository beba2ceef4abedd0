"""The state of a card-game run, and the questions that both its rules and its screen ask
of it (the score, the lanes on offer, whether the selected card wants a target)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kgagent.envs.cardgame_data import (
    BOSS_FLOOR,
    CARDS,
    ENERGY,
    SCORE_BOSS,
    SCORE_ELITE,
    SCORE_FLOOR,
    SCORE_KILL,
    START_DECK,
    START_HP,
)


@dataclass
class Enemy:
    name: str
    hp: int
    max_hp: int
    intents: list[tuple[str, int]]
    idx: int = 0
    block: int = 0
    strength: int = 0
    vulnerable: int = 0

    @property
    def intent(self) -> tuple[str, int]:
        return self.intents[self.idx % len(self.intents)]


@dataclass
class Node:
    kind: str  # fight | elite | rest | boss
    lane: int


@dataclass
class State:
    rng: random.Random
    screen: str = "map"  # map | fight | reward | rest | gameover | victory
    overlay: str | None = None  # deck | draw | discard
    hp: int = START_HP
    max_hp: int = START_HP
    gold: int = 99
    deck: list[str] = field(default_factory=lambda: list(START_DECK))
    upgraded: set[int] = field(default_factory=set)
    floor: int = 0  # floor currently/last entered (0 = not started)
    lane: int = 1
    floors_cleared: int = 0
    kills: int = 0
    elites: int = 0
    bosses: int = 0
    game_map: list[list[Node]] = field(default_factory=list)
    # fight
    enemies: list[Enemy] = field(default_factory=list)
    hand: list[int] = field(default_factory=list)  # deck indices
    draw: list[int] = field(default_factory=list)
    discard: list[int] = field(default_factory=list)
    energy: int = ENERGY
    block: int = 0
    strength: int = 0
    selected: int | None = None  # position in hand
    turn: int = 0
    elite_fight: bool = False
    # reward
    reward_cards: list[str] = field(default_factory=list)
    reward_gold: int = 0


def score(s: State) -> int:
    """The run's score: floors cleared, kills, elites and bosses, each with its weight."""
    return (
        SCORE_FLOOR * s.floors_cleared
        + SCORE_KILL * s.kills
        + SCORE_ELITE * s.elites
        + SCORE_BOSS * s.bosses
    )


def reachable_lanes(s: State) -> list[int]:
    """The lanes of the next floor that the player may enter from the current one."""
    nxt = s.floor + 1
    if nxt >= len(s.game_map):
        return []
    lanes = [n.lane for n in s.game_map[nxt]]
    if s.floor == 0 or nxt == BOSS_FLOOR:
        return lanes
    ok = [ln for ln in lanes if abs(ln - s.lane) <= 1]
    return ok or lanes


def selected_needs_target(s: State) -> bool:
    """Whether a card is selected that is played by clicking an enemy next."""
    if s.selected is None:
        return False
    return CARDS[s.deck[s.hand[s.selected]]][2]
