"""The state of a civ-game city, and what both the rules and the screen ask of it: its
yields, its borders and defence, what it may build or research, and what blocks the turn."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kgagent.envs.civgame_data import BARB_FIRST_TURN, CITY_MAX_HP, ITEMS, MAX_GARRISON, TECHS


@dataclass
class Barbarian:
    col: int
    row: int
    hp: int
    attack: int


@dataclass
class State:
    rng: random.Random
    turn: int = 1
    alive: bool = True
    screen: str = "map"  # map | production | tech | diplomacy | menu | defeat
    popups: list[tuple[str, str]] = field(default_factory=list)
    view: tuple[int, int] = (0, 0)
    city: tuple[int, int] = (0, 0)
    camps: list[tuple[int, int]] = field(default_factory=list)
    pop: int = 1
    food_store: int = 0
    culture: int = 0
    gold: int = 0
    city_hp: int = CITY_MAX_HP
    production: str | None = None
    prod_store: int = 0
    research: str | None = None
    sci_store: int = 0
    techs: set[str] = field(default_factory=lambda: {"Agriculture"})
    built: list[str] = field(default_factory=list)
    barbs: list[Barbarian] = field(default_factory=list)
    barbs_killed: int = 0
    next_barb: int = BARB_FIRST_TURN
    last_event: str = ""


def city_yields(s: State) -> dict[str, int]:
    """Per-turn yields of the city (shown in the top bar)."""
    b = set(s.built)
    food = 2 + s.pop + 2 * ("Granary" in b) + ("Water Mill" in b) - s.pop  # surplus
    prod = 3 + s.pop // 2 + 2 * ("Water Mill" in b) + 2 * ("Forge" in b) + border_level(s)
    sci = 2 + s.pop + ("Shrine" in b) + 3 * ("Library" in b) + 4 * ("University" in b)
    gold = 2 + s.pop // 2 + 3 * ("Market" in b)
    cult = 1 + 2 * ("Monument" in b) + ("Shrine" in b) + 3 * ("Amphitheater" in b)
    return {"food": food, "production": prod, "science": sci, "gold": gold, "culture": cult}


def border_level(s: State) -> int:
    """How far the city's borders reach, in hexes (grows with culture)."""
    c = s.culture
    return 1 + (c >= 20) + (c >= 60) + (c >= 140)


def defence(s: State) -> int:
    """The city's defence against barbarians: walls and garrison."""
    return (
        2 + 8 * s.built.count("Walls") + 4 * s.built.count("Warrior") + 6 * s.built.count("Archer")
    )


def available_techs(s: State) -> list[str]:
    """The technologies that may be researched now."""
    return [t for t in TECHS if tech_available(s, t)]


def tech_available(s: State, t: str) -> bool:
    """Whether ``t`` is unknown and all its prerequisites are known."""
    return t not in s.techs and all(p in s.techs for p in TECHS[t][1])


def buildable(s: State) -> list[str]:
    """What the city may build now."""
    out = []
    for n, (_c, tech, rep, _e) in ITEMS.items():
        if tech not in s.techs:
            continue
        if not rep and n in s.built:
            continue
        if rep and s.built.count(n) >= MAX_GARRISON.get(n, 99):
            continue
        out.append(n)
    return out


def blocker(s: State) -> str | None:
    """The decision that blocks the next turn: production, research, or none."""
    if s.production is None and buildable(s):
        return "production"
    if s.research is None and available_techs(s):
        return "research"
    return None
