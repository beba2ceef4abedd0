"""What "Next turn" does in the civ game: the city's yields are banked, finished buildings
and technologies announced, the city grows, and the barbarians spawn, march and attack."""

from __future__ import annotations

from kgagent.envs.civgame_data import BARB_EVERY, BARB_FIRST_TURN, CITY_MAX_HP, ITEMS, TECHS
from kgagent.envs.civgame_hexmap import hex_dist, neighbours
from kgagent.envs.civgame_state import Barbarian, State, city_yields, defence


def end_turn(s: State) -> None:
    """Advance one turn: yields, finished items and techs, growth, then the barbarians."""
    y = city_yields(s)
    s.turn += 1
    s.gold += y["gold"]
    s.culture += y["culture"]
    # production (delayed payoff: output rises only once the item is finished)
    if s.production is not None:
        s.prod_store += y["production"]
        cost = ITEMS[s.production][0]
        if s.prod_store >= cost:
            s.prod_store -= cost
            s.built.append(s.production)
            s.popups.append(
                (
                    f"{s.production} completed",
                    f"Rome has finished the {s.production}: {ITEMS[s.production][3]}.",
                )
            )
            s.production = None
    # science
    if s.research is not None:
        s.sci_store += y["science"]
        cost = TECHS[s.research][0]
        if s.sci_store >= cost:
            s.sci_store -= cost
            s.techs.add(s.research)
            unlocks = [n for n, v in ITEMS.items() if v[1] == s.research]
            more = f" Unlocks: {', '.join(unlocks)}." if unlocks else ""
            s.popups.append(
                (f"{s.research} discovered", f"Your scholars have mastered {s.research}.{more}")
            )
            s.research = None
    # growth
    s.food_store += y["food"]
    need = 8 + 4 * s.pop
    if s.food_store >= need:
        s.food_store -= need
        s.pop += 1
    _barbarians(s)


def _barbarians(s: State) -> None:
    """Spawn raiders, move them and fight at the city; an emptied city is captured."""
    # spawn
    if s.turn >= s.next_barb:
        camp = s.camps[s.rng.randrange(len(s.camps))]
        n = 1 + (s.turn >= 40) + (s.turn >= 80)
        for _ in range(n):
            s.barbs.append(Barbarian(camp[0], camp[1], 10 + s.turn // 8, 6 + s.turn // 10))
        if s.next_barb == BARB_FIRST_TURN:
            s.popups.append(
                (
                    "Barbarians spotted!",
                    "Barbarians are marching on Rome. Build Warriors or Walls to defend the city.",
                )
            )
        s.next_barb = s.turn + BARB_EVERY + s.rng.randrange(3)
    d = defence(s)
    for b in s.barbs:
        if hex_dist((b.col, b.row), s.city) <= 1:
            b.hp -= 2 + d // 2
            s.city_hp -= max(0, b.attack - d // 2)
        else:
            best = min(neighbours(b.col, b.row), key=lambda p: (hex_dist(p, s.city), p))
            b.col, b.row = best
    dead = [b for b in s.barbs if b.hp <= 0]
    s.barbs_killed += len(dead)
    s.gold += 10 * len(dead)
    s.barbs = [b for b in s.barbs if b.hp > 0]
    if not any(hex_dist((b.col, b.row), s.city) <= 1 for b in s.barbs):
        s.city_hp = min(CITY_MAX_HP, s.city_hp + 3)
    if s.city_hp <= 0:
        s.city_hp = 0
        s.alive = False
        s.screen = "defeat"
        s.popups = []
