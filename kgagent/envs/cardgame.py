"""A deck-building card battler in the spirit of Slay the Spire (1280x720).

Why it exists: it reproduces what makes the papers' method matter on a
machine with no commercial game installed.

* multi-step skills: an attack is two clicks (the card, then the enemy);
* small visual change, high value: "End turn" changes a few pixels of the
  board but is the only way forward once energy is spent;
* functionally equal screens that look different: every hand, every map
  position and every enemy group draws differently;
* dead ends with a large visual change: the deck / draw / discard overlays
  cover the screen and do nothing;
* progress and death: floors cleared, a run score, and a game-over screen that
  terminates the episode.

Rules for humans are in ``docs/games.md``. The game is deterministic given
``reset(seed)`` and the action sequence.

This module is the game's ``Env``: its input and its rules (the map, fights, rewards,
rest sites). The cards and enemies are in ``cardgame_data``, the run's state in
``cardgame_state``, where things lie on screen in ``cardgame_layout``, and the drawing
in ``cardgame_draw``.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from kgagent.actions import Action
from kgagent.envs import render as R
from kgagent.envs.base import Env, GroundTruth
from kgagent.envs.cardgame_data import (
    BOSS_FLOOR,
    BOSS_GROUP,
    CARDS,
    ELITE_GROUPS,
    ENEMIES,
    ENERGY,
    HAND_SIZE,
    NORMAL_GROUPS,
    REWARD_POOL,
    WEAK_GROUPS,
    card_stats,
)
from kgagent.envs.cardgame_draw import render
from kgagent.envs.cardgame_layout import (
    CLOSE_BTN,
    DECK_BTN,
    DISCARD_PILE,
    DRAW_PILE,
    END_TURN,
    HAND_Y,
    REST_BTN,
    SKIP_BTN,
    SMITH_BTN,
    H,
    W,
    enemy_hitboxes,
    hand_boxes,
    map_choices,
    reward_boxes,
)
from kgagent.envs.cardgame_state import Enemy, Node, State, score, selected_needs_target


class CardGame(Env):
    """The card battler. Accepts every Action kind; useless ones change nothing."""

    name = "cardgame"

    def __init__(self, seed: int | None = None) -> None:
        self._seed = 0 if seed is None else int(seed)
        self._s = State(rng=random.Random(self._seed))
        self._frame: np.ndarray | None = None
        self._steps = 0
        self.reset(self._seed)

    # ------------------------------------------------------------ Env API
    @property
    def size(self) -> tuple[int, int]:
        return (W, H)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None:
            self._seed = int(seed)
        rng = random.Random(self._seed)
        self._s = State(rng=rng)
        self._s.game_map = self._make_map(rng)
        self._steps = 0
        self._frame = None
        return self.observe(), self._info()

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        before = score(self._s)
        if not self._over():
            self._steps += 1
            changed = self._dispatch(action)
            if changed:
                self._frame = None
        obs = self.observe()
        return obs, float(score(self._s) - before), self._over(), False, self._info()

    def observe(self) -> np.ndarray:
        if self._frame is None:
            self._frame = render(self._s)
        return self._frame.copy()

    def ground_truth(self) -> GroundTruth:
        s = self._s
        return GroundTruth(
            progression=float(s.floors_cleared),
            score=float(score(s)),
            alive=s.hp > 0,
            extra={
                "kills": s.kills,
                "elites": s.elites,
                "gold": s.gold,
                "hp": s.hp,
                "screen": s.screen,
            },
        )

    def clickable_elements(self) -> list[tuple[str, tuple[int, int, int, int]]]:
        """Elements whose click changes the game now (tests and perception benchmarks only)."""
        s = self._s
        out: list[tuple[str, tuple[int, int, int, int]]] = []
        if s.screen in ("gameover", "victory"):
            return out
        if s.overlay:
            return [("close", CLOSE_BTN)]
        out.append(("deck", DECK_BTN))
        if s.screen == "map":
            for lane, box in map_choices(s):
                kind = next(n.kind for n in s.game_map[s.floor + 1] if n.lane == lane)
                out.append((f"node:{kind}:{lane}", box))
        elif s.screen == "fight":
            for i, box in enumerate(hand_boxes(s)):
                name = s.deck[s.hand[i]]
                if self._cost(s.hand[i]) <= s.energy and i != s.selected:
                    out.append((f"card:{name}:{i}", box))
            if selected_needs_target(s):
                for i, box in enumerate(enemy_hitboxes(s)):
                    if s.enemies[i].hp > 0:
                        out.append((f"enemy:{s.enemies[i].name}:{i}", box))
            out += [
                ("end_turn", END_TURN),
                ("draw_pile", DRAW_PILE),
                ("discard_pile", DISCARD_PILE),
            ]
        elif s.screen == "reward":
            for i, box in enumerate(reward_boxes(s)):
                out.append((f"reward:{s.reward_cards[i]}", box))
            out.append(("skip", SKIP_BTN))
        elif s.screen == "rest":
            out += [("rest", REST_BTN), ("smith", SMITH_BTN)]
        return out

    # ------------------------------------------------------------ metrics

    def _over(self) -> bool:
        return self._s.screen in ("gameover", "victory")

    def _info(self) -> dict[str, Any]:
        s = self._s
        return {
            "screen": s.screen,
            "overlay": s.overlay,
            "floor": s.floor,
            "floors_cleared": s.floors_cleared,
            "progression": float(s.floors_cleared),
            "score": float(score(s)),
            "alive": s.hp > 0,
            "hp": s.hp,
            "max_hp": s.max_hp,
            "gold": s.gold,
            "kills": s.kills,
            "elites": s.elites,
            "deck_size": len(s.deck),
            "steps": self._steps,
        }

    # ------------------------------------------------------------ map
    @staticmethod
    def _make_map(rng: random.Random) -> list[list[Node]]:
        floors: list[list[Node]] = [[]]  # index 0 unused: floors are 1-based
        for f in range(1, BOSS_FLOOR):
            lanes = sorted(rng.sample([0, 1, 2], rng.choice([2, 3, 3])))
            row = []
            for lane in lanes:
                if f <= 2:
                    kind = "fight"
                else:
                    r = rng.random()
                    kind = "elite" if (r < 0.16 and f >= 4) else "rest" if r < 0.36 else "fight"
                row.append(Node(kind, lane))
            floors.append(row)
        floors.append([Node("boss", 1)])
        return floors

    # ------------------------------------------------------------ input
    def _dispatch(self, a: Action) -> bool:
        s = self._s
        if a.kind in ("click", "double_click"):
            return self._click(a.x, a.y)  # type: ignore[arg-type]
        if a.kind == "right_click":
            return self._cancel()
        if a.kind == "drag":
            if s.screen == "fight" and s.overlay is None:
                return self._drag(a.x, a.y, a.x2, a.y2)  # type: ignore[arg-type]
            return False
        if a.kind == "key":
            return self._key((a.key or "").lower())
        return False  # scroll, hotkey, type: nothing in this game reacts

    def _cancel(self) -> bool:
        s = self._s
        if s.overlay:
            s.overlay = None
            return True
        if s.selected is not None:
            s.selected = None
            return True
        return False

    def _key(self, key: str) -> bool:
        s = self._s
        if key in ("escape", "esc"):
            return self._cancel()
        if s.overlay:
            return False
        if s.screen == "fight":
            if key == "e":
                self._end_turn()
                return True
            if key.isdigit() and key != "0":
                i = int(key) - 1
                if i < len(s.hand):
                    return self._click_card(i)
        return False

    def _click(self, x: int, y: int) -> bool:
        s = self._s
        if s.overlay:
            if R.contains(CLOSE_BTN, x, y):
                s.overlay = None
                return True
            return False
        if R.contains(DECK_BTN, x, y):
            s.overlay = "deck"
            return True
        if s.screen == "map":
            for lane, box in map_choices(s):
                if R.contains(box, x, y):
                    self._enter(lane)
                    return True
        elif s.screen == "fight":
            return self._click_fight(x, y)
        elif s.screen == "reward":
            for i, box in enumerate(reward_boxes(s)):
                if R.contains(box, x, y):
                    s.deck.append(s.reward_cards[i])
                    s.screen = "map"
                    return True
            if R.contains(SKIP_BTN, x, y):
                s.screen = "map"
                return True
        elif s.screen == "rest":
            if R.contains(REST_BTN, x, y):
                s.hp = min(s.max_hp, s.hp + int(s.max_hp * 0.3))
                self._leave_rest()
                return True
            if R.contains(SMITH_BTN, x, y):
                for i, c in enumerate(s.deck):
                    if i not in s.upgraded and c in ("Strike", "Defend", "Bash"):
                        s.upgraded.add(i)
                        break
                self._leave_rest()
                return True
        return False

    def _leave_rest(self) -> None:
        s = self._s
        s.floors_cleared += 1
        s.screen = "map"

    def _enter(self, lane: int) -> None:
        s = self._s
        s.floor += 1
        s.lane = lane
        node = next(n for n in s.game_map[s.floor] if n.lane == lane)
        if node.kind == "rest":
            s.screen = "rest"
            return
        if node.kind == "boss":
            group = BOSS_GROUP
        elif node.kind == "elite":
            group = s.rng.choice(ELITE_GROUPS)
        elif s.floor <= 3:
            group = s.rng.choice(WEAK_GROUPS)
        else:
            group = s.rng.choice(NORMAL_GROUPS)
        scale = 1.0 + 0.06 * (s.floor - 1)
        s.enemies = []
        for name in group:
            lo, hi, _col, intents = ENEMIES[name]
            hp = int(s.rng.randint(lo, hi) * scale)
            extra = (s.floor - 1) // 4
            its = [(k, v + extra if k == "attack" else v) for k, v in intents]
            s.enemies.append(Enemy(name, hp, hp, its, idx=s.rng.randrange(len(its))))
        s.elite_fight = node.kind == "elite"
        s.screen = "fight"
        s.draw = list(range(len(s.deck)))
        s.rng.shuffle(s.draw)
        s.discard, s.hand = [], []
        s.strength = 0
        s.turn = 0
        self._start_turn()

    # ------------------------------------------------------------ fight
    def _cost(self, deck_idx: int) -> int:
        return CARDS[self._s.deck[deck_idx]][0]

    def _click_fight(self, x: int, y: int) -> bool:
        s = self._s
        if R.contains(END_TURN, x, y):
            self._end_turn()
            return True
        if R.contains(DRAW_PILE, x, y):
            s.overlay = "draw"
            return True
        if R.contains(DISCARD_PILE, x, y):
            s.overlay = "discard"
            return True
        boxes = hand_boxes(s)
        # the selected card is drawn last (on top); test it first
        order = ([s.selected] if s.selected is not None else []) + [
            i for i in range(len(boxes) - 1, -1, -1) if i != s.selected
        ]
        for i in order:
            if R.contains(boxes[i], x, y):
                return self._click_card(i)
        if selected_needs_target(s):
            for i, box in enumerate(enemy_hitboxes(s)):
                if s.enemies[i].hp > 0 and R.contains(box, x, y):
                    self._play(s.selected, i)  # type: ignore[arg-type]
                    return True
        return False

    def _click_card(self, i: int) -> bool:
        s = self._s
        if i == s.selected or self._cost(s.hand[i]) > s.energy:
            return False
        if CARDS[s.deck[s.hand[i]]][2]:
            s.selected = i
        else:
            self._play(i, None)
        return True

    def _drag(self, x: int, y: int, x2: int, y2: int) -> bool:
        s = self._s
        for i, box in enumerate(hand_boxes(s)):
            if R.contains(box, x, y):
                if self._cost(s.hand[i]) > s.energy:
                    return False
                if CARDS[s.deck[s.hand[i]]][2]:
                    for j, eb in enumerate(enemy_hitboxes(s)):
                        if s.enemies[j].hp > 0 and R.contains(eb, x2, y2):
                            self._play(i, j)
                            return True
                    return False
                if y2 < HAND_Y - 40:
                    self._play(i, None)
                    return True
                return False
        return False

    def _hit(self, e: Enemy, dmg: int) -> None:
        dmg = dmg + self._s.strength
        if e.vulnerable > 0:
            dmg = int(dmg * 1.5)
        absorbed = min(e.block, dmg)
        e.block -= absorbed
        e.hp = max(0, e.hp - (dmg - absorbed))

    def _play(self, hand_pos: int, target: int | None) -> None:
        s = self._s
        deck_idx = s.hand[hand_pos]
        name = s.deck[deck_idx]
        cost, kind, _tgt, dmg, blk, _d = card_stats(name, deck_idx in s.upgraded)
        s.energy -= cost
        s.hand.pop(hand_pos)
        s.selected = None
        s.discard.append(deck_idx)
        alive = [e for e in s.enemies if e.hp > 0]
        tgt = s.enemies[target] if target is not None else None
        s.block += blk
        if (
            name in ("Strike", "Bash", "Iron Wave", "Pommel Strike", "Heavy Blow", "Quick Slash")
            and tgt
        ):
            self._hit(tgt, dmg)
        if name == "Twin Strike" and tgt:
            self._hit(tgt, dmg)
            self._hit(tgt, dmg)
        if name == "Bash" and tgt:
            tgt.vulnerable += 2
        if name in ("Cleave", "Thunderclap"):
            for e in alive:
                self._hit(e, dmg)
                if name == "Thunderclap":
                    e.vulnerable += 1
        if name in ("Pommel Strike", "Shrug It Off"):
            self._draw(1)
        if name == "Inflame":
            s.strength += 2
        if name == "Bloodletting":
            s.hp = max(0, s.hp - 3)
            s.energy += 2
            if s.hp == 0:
                s.screen = "gameover"
                return
        for e in alive:
            if e.hp == 0:
                s.kills += 1
        if all(e.hp == 0 for e in s.enemies):
            self._win_fight()

    def _win_fight(self) -> None:
        s = self._s
        s.floors_cleared += 1
        if s.elite_fight:
            s.elites += 1
        if s.floor == BOSS_FLOOR:
            s.bosses += 1
            s.screen = "victory"
            return
        s.reward_gold = s.rng.randint(25, 35) if s.elite_fight else s.rng.randint(10, 20)
        s.gold += s.reward_gold
        s.reward_cards = s.rng.sample(REWARD_POOL, 3)
        s.screen = "reward"
        s.hand, s.selected = [], None

    def _draw(self, n: int) -> None:
        s = self._s
        for _ in range(n):
            if not s.draw:
                if not s.discard:
                    return
                s.draw = s.discard
                s.discard = []
                s.rng.shuffle(s.draw)
            if len(s.hand) >= 10:
                s.discard.append(s.draw.pop())
            else:
                s.hand.append(s.draw.pop())

    def _start_turn(self) -> None:
        s = self._s
        s.turn += 1
        s.energy = ENERGY
        s.block = 0
        s.selected = None
        self._draw(HAND_SIZE)

    def _end_turn(self) -> None:
        s = self._s
        s.discard.extend(s.hand)
        s.hand = []
        s.selected = None
        for e in s.enemies:
            if e.hp <= 0:
                continue
            e.block = 0
            kind, val = e.intent
            if kind == "attack":
                dmg = val + e.strength
                absorbed = min(s.block, dmg)
                s.block -= absorbed
                s.hp = max(0, s.hp - (dmg - absorbed))
            elif kind == "block":
                e.block += val
            elif kind == "buff":
                e.strength += val
            e.idx += 1
            if e.vulnerable > 0:
                e.vulnerable -= 1
            if s.hp == 0:
                s.screen = "gameover"
                return
        self._start_turn()
