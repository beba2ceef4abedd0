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
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import cv2
import numpy as np

from kgagent.actions import Action
from kgagent.envs import render as R
from kgagent.envs.base import Env, GroundTruth

W, H = 1280, 720

# ---------------------------------------------------------------- cards
# name: (cost, kind, needs_target, damage, block, description)
CARDS: dict[str, tuple[int, str, bool, int, int, str]] = {
    "Strike": (1, "attack", True, 6, 0, "Deal 6 damage."),
    "Defend": (1, "skill", False, 0, 5, "Gain 5 Block."),
    "Bash": (2, "attack", True, 8, 0, "Deal 8 damage. Apply 2 Vulnerable."),
    "Cleave": (1, "attack", False, 8, 0, "Deal 8 damage to ALL enemies."),
    "Iron Wave": (1, "attack", True, 5, 5, "Gain 5 Block. Deal 5 damage."),
    "Pommel Strike": (1, "attack", True, 9, 0, "Deal 9 damage. Draw 1 card."),
    "Shrug It Off": (1, "skill", False, 0, 8, "Gain 8 Block. Draw 1 card."),
    "Heavy Blow": (2, "attack", True, 15, 0, "Deal 15 damage."),
    "Quick Slash": (0, "attack", True, 5, 0, "Deal 5 damage."),
    "Twin Strike": (1, "attack", True, 5, 0, "Deal 5 damage twice."),
    "Thunderclap": (1, "attack", False, 4, 0, "Deal 4 damage and apply 1 Vulnerable to ALL."),
    "Inflame": (1, "power", False, 0, 0, "Gain 2 Strength."),
    "Bloodletting": (0, "skill", False, 0, 0, "Lose 3 HP. Gain 2 Energy."),
    "Iron Skin": (2, "skill", False, 0, 13, "Gain 13 Block."),
}
REWARD_POOL = [c for c in CARDS if c not in ("Strike", "Defend")]
START_DECK = ["Strike"] * 5 + ["Defend"] * 4 + ["Bash"]

# ---------------------------------------------------------------- enemies
# name: (hp_lo, hp_hi, colour, intents cycle)
ENEMIES: dict[str, tuple[int, int, tuple[int, int, int], list[tuple[str, int]]]] = {
    "Slime": (11, 14, (90, 190, 110), [("attack", 5), ("block", 4), ("attack", 6)]),
    "Bone Imp": (8, 11, (200, 190, 170), [("attack", 4), ("attack", 5)]),
    "Cave Slug": (16, 20, (170, 120, 90), [("buff", 2), ("attack", 6), ("attack", 6)]),
    "Rat Knight": (34, 40, (130, 120, 150), [("attack", 10), ("block", 8), ("attack", 8)]),
    "Fanatic": (40, 46, (150, 60, 150), [("buff", 3), ("attack", 6), ("attack", 6)]),
    "Mire Toad": (24, 28, (90, 140, 80), [("attack", 7), ("block", 6), ("attack", 9)]),
    "Ogre Brute": (76, 84, (190, 90, 60), [("buff", 2), ("attack", 14), ("attack", 12)]),
    "Sentinel": (34, 38, (120, 140, 190), [("block", 10), ("attack", 9), ("attack", 11)]),
    "Guardian": (
        180,
        200,
        (160, 160, 90),
        [("block", 15), ("attack", 18), ("buff", 3), ("attack", 10)],
    ),
}
WEAK_GROUPS = [["Slime"], ["Bone Imp", "Bone Imp"], ["Cave Slug"]]
NORMAL_GROUPS = [
    ["Rat Knight"],
    ["Slime", "Slime", "Bone Imp"],
    ["Fanatic"],
    ["Mire Toad", "Bone Imp"],
]
ELITE_GROUPS = [["Ogre Brute"], ["Sentinel", "Sentinel"]]
BOSS_GROUP = ["Guardian"]
BOSS_FLOOR = 16
START_HP = 80
ENERGY = 3
HAND_SIZE = 5

# ---------------------------------------------------------------- layout
TOP_BAR = 44
DECK_BTN = (1130, 6, 136, 32)
END_TURN = (1048, 530, 220, 72)
DRAW_PILE = (20, 640, 104, 60)
DISCARD_PILE = (1156, 640, 104, 60)
ENERGY_ORB = (96, 560)
CLOSE_BTN = (440, 646, 400, 60)
ENEMY_X = (690, 870, 1050)
ENEMY_BOX = (170, 250)  # w, h; top at 150
CARD_W, CARD_H = 128, 178
HAND_Y = 520
MAP_LANES = (420, 640, 860)
MAP_BOTTOM = 640
MAP_STEP = 112
NODE_R = 46
REWARD_CARD_X = (330, 550, 770)
REWARD_CARD = (180, 250)
SKIP_BTN = (560, 580, 160, 56)
REST_BTN = (380, 470, 220, 80)
SMITH_BTN = (680, 470, 220, 80)

SCORE_FLOOR, SCORE_KILL, SCORE_ELITE, SCORE_BOSS = 5, 2, 10, 50


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


def _card_stats(name: str, upgraded: bool) -> tuple[int, str, bool, int, int, str]:
    cost, kind, tgt, dmg, blk, desc = CARDS[name]
    if upgraded:
        dmg = dmg + 3 if dmg else 0
        blk = blk + 3 if blk else 0
        desc = desc.replace(f"Deal {CARDS[name][3]}", f"Deal {dmg}").replace(
            f"Gain {CARDS[name][4]}", f"Gain {blk}"
        )
    return cost, kind, tgt, dmg, blk, desc


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
        before = self._score()
        if not self._over():
            self._steps += 1
            changed = self._dispatch(action)
            if changed:
                self._frame = None
        obs = self.observe()
        return obs, float(self._score() - before), self._over(), False, self._info()

    def observe(self) -> np.ndarray:
        if self._frame is None:
            self._frame = self._render()
        return self._frame.copy()

    def ground_truth(self) -> GroundTruth:
        s = self._s
        return GroundTruth(
            progression=float(s.floors_cleared),
            score=float(self._score()),
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
            for lane, box in self._map_choices():
                kind = next(n.kind for n in s.game_map[s.floor + 1] if n.lane == lane)
                out.append((f"node:{kind}:{lane}", box))
        elif s.screen == "fight":
            for i, box in enumerate(self._hand_boxes()):
                name = s.deck[s.hand[i]]
                if self._cost(s.hand[i]) <= s.energy and i != s.selected:
                    out.append((f"card:{name}:{i}", box))
            if self._selected_needs_target():
                for i, box in enumerate(self._enemy_hitboxes()):
                    if s.enemies[i].hp > 0:
                        out.append((f"enemy:{s.enemies[i].name}:{i}", box))
            out += [
                ("end_turn", END_TURN),
                ("draw_pile", DRAW_PILE),
                ("discard_pile", DISCARD_PILE),
            ]
        elif s.screen == "reward":
            for i, box in enumerate(self._reward_boxes()):
                out.append((f"reward:{s.reward_cards[i]}", box))
            out.append(("skip", SKIP_BTN))
        elif s.screen == "rest":
            out += [("rest", REST_BTN), ("smith", SMITH_BTN)]
        return out

    # ------------------------------------------------------------ metrics
    def _score(self) -> int:
        s = self._s
        return (
            SCORE_FLOOR * s.floors_cleared
            + SCORE_KILL * s.kills
            + SCORE_ELITE * s.elites
            + SCORE_BOSS * s.bosses
        )

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
            "score": float(self._score()),
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

    def _reachable_lanes(self) -> list[int]:
        s = self._s
        nxt = s.floor + 1
        if nxt >= len(s.game_map):
            return []
        lanes = [n.lane for n in s.game_map[nxt]]
        if s.floor == 0 or nxt == BOSS_FLOOR:
            return lanes
        ok = [ln for ln in lanes if abs(ln - s.lane) <= 1]
        return ok or lanes

    def _node_center(self, floor: int, lane: int) -> tuple[int, int]:
        base = max(1, self._s.floor)  # the row of the current floor sits at the bottom
        return MAP_LANES[lane], MAP_BOTTOM - (floor - base) * MAP_STEP

    def _map_choices(self) -> list[tuple[int, tuple[int, int, int, int]]]:
        s = self._s
        out = []
        for lane in self._reachable_lanes():
            cx, cy = self._node_center(s.floor + 1, lane)
            out.append((lane, (cx - NODE_R, cy - NODE_R, 2 * NODE_R, 2 * NODE_R)))
        return out

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
            for lane, box in self._map_choices():
                if R.contains(box, x, y):
                    self._enter(lane)
                    return True
        elif s.screen == "fight":
            return self._click_fight(x, y)
        elif s.screen == "reward":
            for i, box in enumerate(self._reward_boxes()):
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

    def _selected_needs_target(self) -> bool:
        s = self._s
        if s.selected is None:
            return False
        return CARDS[s.deck[s.hand[s.selected]]][2]

    def _hand_boxes(self) -> list[tuple[int, int, int, int]]:
        s = self._s
        n = len(s.hand)
        if n == 0:
            return []
        step = min(CARD_W + 10, (860 - CARD_W) // max(1, n - 1)) if n > 1 else 0
        total = step * (n - 1) + CARD_W
        x0 = 600 - total // 2
        boxes = []
        for i in range(n):
            y = HAND_Y - 34 if i == s.selected else HAND_Y
            boxes.append((x0 + i * step, y, CARD_W if i == n - 1 else min(CARD_W, step), CARD_H))
        return boxes

    def _enemy_boxes(self) -> list[tuple[int, int, int, int]]:
        n = len(self._s.enemies)
        xs = ENEMY_X[3 - n :] if n < 3 else ENEMY_X
        if n == 1:
            xs = (870,)
        w, h = ENEMY_BOX
        return [(cx - w // 2, 150, w, h) for cx in xs[:n]]

    def _enemy_hitboxes(self) -> list[tuple[int, int, int, int]]:
        """Where a click targets an enemy: its whole column, intent and HP bar included."""
        return [(x - 5, 60, w + 10, 410) for x, _y, w, _h in self._enemy_boxes()]

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
        boxes = self._hand_boxes()
        # the selected card is drawn last (on top); test it first
        order = ([s.selected] if s.selected is not None else []) + [
            i for i in range(len(boxes) - 1, -1, -1) if i != s.selected
        ]
        for i in order:
            if R.contains(boxes[i], x, y):
                return self._click_card(i)
        if self._selected_needs_target():
            for i, box in enumerate(self._enemy_hitboxes()):
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
        for i, box in enumerate(self._hand_boxes()):
            if R.contains(box, x, y):
                if self._cost(s.hand[i]) > s.energy:
                    return False
                if CARDS[s.deck[s.hand[i]]][2]:
                    for j, eb in enumerate(self._enemy_hitboxes()):
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
        cost, kind, _tgt, dmg, blk, _d = _card_stats(name, deck_idx in s.upgraded)
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

    def _reward_boxes(self) -> list[tuple[int, int, int, int]]:
        w, h = REWARD_CARD
        return [(x, 250, w, h) for x in REWARD_CARD_X[: len(self._s.reward_cards)]]

    # ------------------------------------------------------------ render
    def _render(self) -> np.ndarray:
        s = self._s
        if s.screen == "map":
            img = self._render_map()
        elif s.screen == "fight":
            img = self._render_fight()
        elif s.screen == "reward":
            img = self._render_reward()
        elif s.screen == "rest":
            img = self._render_rest()
        else:
            img = self._render_end()
        if s.screen not in ("gameover", "victory"):
            self._render_top(img)
        if s.overlay:
            self._render_overlay(img)
        return img

    def _render_top(self, img: np.ndarray) -> None:
        s = self._s
        R.fill(img, (0, 0, W, TOP_BAR), (24, 22, 28))
        R.fill(img, (0, TOP_BAR - 2, W, 2), (90, 70, 40))
        R.text(img, "Ironclad", 16, 22, 0.7, R.WHITE, 1, "lm", R.FONT_BOLD)
        R.icon_heart(img, 170, 22, 11)
        R.text(img, f"{s.hp}/{s.max_hp}", 190, 22, 0.6, (240, 120, 110), 1, "lm")
        R.icon_coin(img, 300, 22, 10)
        R.text(img, str(s.gold), 318, 22, 0.6, R.GOLD, 1, "lm")
        R.text(img, f"Floor {s.floor}", 640, 22, 0.65, R.WHITE, 1, "cm")
        R.button(
            img, DECK_BTN, f"Deck ({len(s.deck)})", (70, 55, 40), R.WHITE, (160, 130, 80), 0.55
        )

    def _render_map(self) -> np.ndarray:
        s = self._s
        img = _map_bg().copy()
        R.text(img, "Choose your next room", 640, 80, 0.9, (60, 40, 20), 2, "cm", R.FONT_BOLD)
        base = max(1, s.floor)
        reach = set(self._reachable_lanes())
        # edges first
        for f in range(base, min(len(s.game_map) - 1, base + 5)):
            for n in s.game_map[f]:
                for m in s.game_map[f + 1]:
                    if abs(m.lane - n.lane) <= 1 or f + 1 == BOSS_FLOOR:
                        p, q = self._node_center(f, n.lane), self._node_center(f + 1, m.lane)
                        if q[1] > 110:
                            cv2.line(img, p, q, (150, 120, 80), 2, cv2.LINE_AA)
        for f in range(base, min(len(s.game_map), base + 6)):
            for n in s.game_map[f]:
                cx, cy = self._node_center(f, n.lane)
                if cy < 110:
                    continue
                avail = f == s.floor + 1 and n.lane in reach
                visited = f == s.floor and n.lane == s.lane
                ring = (230, 170, 40) if avail else (80, 60, 40) if not visited else (40, 120, 40)
                fillc = (245, 230, 195) if avail else (215, 200, 170)
                cv2.circle(img, (cx, cy), NODE_R, fillc, -1, cv2.LINE_AA)
                cv2.circle(img, (cx, cy), NODE_R, ring, 4 if avail else 2, cv2.LINE_AA)
                r = 18
                if n.kind == "fight":
                    R.icon_sword(img, cx, cy - 6, r, (70, 60, 60))
                elif n.kind == "elite":
                    R.icon_skull(img, cx, cy - 6, r, (180, 50, 40))
                elif n.kind == "rest":
                    R.icon_fire(img, cx, cy - 6, r)
                else:
                    R.icon_skull(img, cx, cy - 8, 24, (110, 30, 30))
                label = {"fight": "Fight", "elite": "Elite", "rest": "Rest", "boss": "BOSS"}[n.kind]
                R.text(img, label, cx, cy + 24, 0.42, (50, 35, 20), 1, "cm")
            fy = self._node_center(f, 0)[1]
            if fy >= 110:
                R.text(img, f"Floor {f}", 300, fy, 0.5, (120, 90, 60), 1, "cm")
        # legend
        R.panel(img, (1020, 120, 220, 170), (225, 210, 180), (120, 90, 60), 8)
        R.text(img, "Legend", 1130, 140, 0.6, (60, 40, 20), 1, "cm")
        R.icon_sword(img, 1050, 180, 12, (70, 60, 60))
        R.text(img, "Monster", 1075, 180, 0.5, (60, 40, 20), 1, "lm")
        R.icon_skull(img, 1050, 220, 12, (180, 50, 40))
        R.text(img, "Elite", 1075, 220, 0.5, (60, 40, 20), 1, "lm")
        R.icon_fire(img, 1050, 260, 12)
        R.text(img, "Rest site", 1075, 260, 0.5, (60, 40, 20), 1, "lm")
        return img

    def _render_fight(self) -> np.ndarray:
        s = self._s
        img = _fight_bg().copy()
        # player
        _draw_player(img, 250, 300)
        R.bar(img, (170, 420, 160, 16), s.hp / s.max_hp, (200, 50, 50), label=f"{s.hp}/{s.max_hp}")
        if s.block:
            R.icon_shield(img, 158, 428, 14)
            R.text(img, str(s.block), 158, 426, 0.45, R.WHITE, 1, "cm")
        if s.strength:
            R.text(img, f"Strength {s.strength}", 250, 450, 0.45, (240, 180, 80), 1, "cm")
        # enemies
        for e, box in zip(s.enemies, self._enemy_boxes()):
            x, y, w, h = box
            cx = x + w // 2
            if e.hp <= 0:
                R.text(img, "defeated", cx, y + h // 2, 0.5, (120, 110, 110), 1, "cm")
                continue
            targeting = self._selected_needs_target()
            if targeting:
                R.rect(img, (x - 4, y - 4, w + 8, h + 8), (230, 80, 60), 2)
            _draw_enemy(img, e.name, cx, y + 110)
            R.text(img, e.name, cx, y + h - 8, 0.5, R.WHITE, 1, "cm")
            R.bar(
                img,
                (x + 10, y + h + 8, w - 20, 14),
                e.hp / e.max_hp,
                (200, 50, 50),
                label=f"{e.hp}/{e.max_hp}",
            )
            if e.block:
                R.icon_shield(img, x + 4, y + h + 14, 11)
                R.text(img, str(e.block), x + 4, y + h + 13, 0.4, R.WHITE, 1, "cm")
            if e.vulnerable:
                R.text(img, f"Vuln {e.vulnerable}", cx, y + h + 34, 0.4, (240, 160, 90), 1, "cm")
            kind, val = e.intent
            iy = y - 12
            if kind == "attack":
                R.icon_sword(img, cx - 10, iy, 11, (240, 90, 70))
                R.text(img, str(val + e.strength), cx + 10, iy, 0.6, R.WHITE, 1, "lm")
            elif kind == "block":
                R.icon_shield(img, cx, iy, 11)
            else:
                R.icon_up(img, cx, iy, 11)
        # energy, piles, end turn
        ex, ey = ENERGY_ORB
        cv2.circle(img, (ex, ey), 40, (200, 80, 40), -1, cv2.LINE_AA)
        cv2.circle(img, (ex, ey), 40, (250, 190, 90), 3, cv2.LINE_AA)
        R.text(img, f"{s.energy}/{ENERGY}", ex, ey, 0.8, R.WHITE, 2, "cm")
        R.button(
            img, DRAW_PILE, f"Draw {len(s.draw)}", (60, 60, 80), R.WHITE, (150, 150, 170), 0.55
        )
        R.button(
            img,
            DISCARD_PILE,
            f"Discard {len(s.discard)}",
            (60, 60, 80),
            R.WHITE,
            (150, 150, 170),
            0.5,
        )
        R.button(img, END_TURN, "End Turn", (60, 110, 150), R.WHITE, (180, 220, 240), 0.75, 1)
        R.text(img, f"Turn {s.turn}", 1158, 512, 0.5, (200, 200, 200), 1, "cm")
        # hand (selected card drawn last, on top)
        boxes = self._hand_boxes()
        order = [i for i in range(len(boxes)) if i != s.selected] + (
            [s.selected] if s.selected is not None else []
        )
        for i in order:
            deck_idx = s.hand[i]
            up = deck_idx in s.upgraded
            cost, kind, _t, _dm, _b, desc = _card_stats(s.deck[deck_idx], up)
            x, y, _w, h = boxes[i]
            R.card(
                img,
                (x, y, CARD_W, h),
                s.deck[deck_idx] + ("+" if up else ""),
                cost,
                kind,
                desc,
                i == s.selected,
                cost <= s.energy,
            )
        if self._selected_needs_target():
            R.text(img, "Choose a target", 870, 470, 0.6, (250, 220, 120), 1, "cm")
        return img

    def _render_reward(self) -> np.ndarray:
        s = self._s
        img = _fight_bg().copy()
        R.blend(img, (0, 0, W, H), (0, 0, 0), 0.55)
        R.panel(img, (290, 90, 700, 560), (40, 36, 44), (190, 150, 80), 12, 3)
        R.text(img, "Victory!", 640, 130, 1.1, R.GOLD, 2, "cm", R.FONT_BOLD)
        R.icon_coin(img, 560, 185, 12)
        R.text(img, f"+{s.reward_gold} gold", 580, 185, 0.65, R.GOLD, 1, "lm")
        R.text(img, "Choose a card to add to your deck", 640, 228, 0.6, R.WHITE, 1, "cm")
        for name, box in zip(s.reward_cards, self._reward_boxes()):
            cost, kind, _t, _d, _b, desc = CARDS[name]
            R.card(img, box, name, cost, kind, desc)
        R.button(img, SKIP_BTN, "Skip", (80, 60, 50), R.WHITE, (190, 150, 80), 0.7)
        return img

    def _render_rest(self) -> np.ndarray:
        s = self._s
        img = _rest_bg().copy()
        R.text(img, "Rest Site", 640, 110, 1.1, (250, 220, 160), 2, "cm", R.FONT_BOLD)
        heal = min(s.max_hp - s.hp, int(s.max_hp * 0.3))
        R.button(img, REST_BTN, f"Rest (+{heal} HP)", (70, 100, 60), R.WHITE, (200, 220, 160), 0.65)
        R.button(img, SMITH_BTN, "Smith (upgrade)", (100, 80, 60), R.WHITE, (220, 190, 150), 0.65)
        return img

    def _render_end(self) -> np.ndarray:
        s = self._s
        img = (
            R.vgradient(W, H, (20, 10, 12), (60, 20, 20))
            if s.screen == "gameover"
            else R.vgradient(W, H, (30, 30, 10), (90, 80, 30))
        )
        title = "YOU DIED" if s.screen == "gameover" else "VICTORY"
        R.text(
            img,
            title,
            640,
            220,
            2.0,
            (220, 60, 50) if s.screen == "gameover" else R.GOLD,
            3,
            "cm",
            R.FONT_BOLD,
        )
        R.text(img, f"Floors cleared: {s.floors_cleared}", 640, 330, 0.8, R.WHITE, 1, "cm")
        R.text(
            img, f"Enemies slain: {s.kills}   Elites: {s.elites}", 640, 380, 0.8, R.WHITE, 1, "cm"
        )
        R.text(img, f"Score: {self._score()}", 640, 450, 1.0, R.GOLD, 2, "cm")
        return img

    def _render_overlay(self, img: np.ndarray) -> None:
        s = self._s
        R.blend(img, (0, TOP_BAR, W, H - TOP_BAR), (0, 0, 0), 0.75)
        if s.overlay == "deck":
            idxs, title = list(range(len(s.deck))), "Deck"
        elif s.overlay == "draw":
            idxs, title = sorted(s.draw, key=lambda i: s.deck[i]), "Draw pile"
        else:
            idxs, title = list(s.discard), "Discard pile"
        R.text(img, f"{title} ({len(idxs)} cards)", 640, 76, 0.8, R.WHITE, 1, "cm")
        cw, ch = 100, 140
        for k, i in enumerate(idxs[:24]):
            col, row = k % 10, k // 10
            x, y = 90 + col * 112, 110 + row * 170
            up = i in s.upgraded
            cost, kind, _t, _dm, _b, desc = _card_stats(s.deck[i], up)
            R.card(img, (x, y, cw, ch), s.deck[i] + ("+" if up else ""), cost, kind, "")
        if not idxs:
            R.text(img, "(empty)", 640, 300, 0.8, (180, 180, 180), 1, "cm")
        R.button(img, CLOSE_BTN, "Return", (90, 60, 50), R.WHITE, (200, 160, 100), 0.7)


# ---------------------------------------------------------------- static art
@lru_cache(maxsize=1)
def _fight_bg() -> np.ndarray:
    img = R.vgradient(W, H, (40, 46, 70), (70, 55, 60))
    img[430:, :] = R.vgradient(W, H - 430, (60, 50, 45), (30, 26, 24))
    for i in range(0, W, 90):
        cv2.line(img, (i, 430), (i - 60, H), (50, 42, 38), 1, cv2.LINE_AA)
    cv2.circle(img, (1100, 110), 60, (70, 75, 100), -1, cv2.LINE_AA)
    img.setflags(write=False)
    return img


@lru_cache(maxsize=1)
def _map_bg() -> np.ndarray:
    img = R.vgradient(W, H, (232, 216, 180), (205, 185, 145))
    rng = np.random.default_rng(7)
    noise = rng.integers(-8, 8, (H, W, 1), dtype=np.int16)
    img = np.clip(img.astype(np.int16) + noise, 0, 255).astype(np.uint8)
    R.rect(img, (250, 60, 780, 650), (140, 110, 70), 3)
    img.setflags(write=False)
    return img


@lru_cache(maxsize=1)
def _rest_bg() -> np.ndarray:
    img = R.vgradient(W, H, (15, 18, 35), (50, 35, 30))
    cv2.ellipse(img, (640, 380), (160, 30), 0, 0, 360, (60, 45, 35), -1, cv2.LINE_AA)
    R.icon_fire(img, 640, 330, 60)
    img.setflags(write=False)
    return img


def _draw_player(img: np.ndarray, cx: int, cy: int) -> None:
    cv2.ellipse(img, (cx, cy + 100), (70, 14), 0, 0, 360, (25, 22, 22), -1, cv2.LINE_AA)
    body = np.array(
        [(cx - 40, cy + 100), (cx - 30, cy - 20), (cx + 30, cy - 20), (cx + 40, cy + 100)], np.int32
    )
    cv2.fillPoly(img, [body], (150, 40, 40), cv2.LINE_AA)
    cv2.circle(img, (cx, cy - 50), 30, (220, 180, 150), -1, cv2.LINE_AA)
    cv2.line(img, (cx + 30, cy), (cx + 90, cy - 70), (200, 200, 210), 6, cv2.LINE_AA)


def _draw_enemy(img: np.ndarray, name: str, cx: int, cy: int) -> None:
    col = ENEMIES[name][2]
    big = name in ("Ogre Brute", "Guardian")
    rx, ry = (62, 70) if big else (50, 48)
    cv2.ellipse(img, (cx, cy + ry), (rx + 10, 10), 0, 0, 360, (25, 22, 22), -1, cv2.LINE_AA)
    if name in ("Sentinel", "Guardian"):
        pts = np.array([(cx, cy - ry), (cx + rx, cy), (cx, cy + ry), (cx - rx, cy)], np.int32)
        cv2.fillPoly(img, [pts], col, cv2.LINE_AA)
    else:
        cv2.ellipse(img, (cx, cy), (rx, ry), 0, 0, 360, col, -1, cv2.LINE_AA)
    dark = tuple(int(c * 0.5) for c in col)
    cv2.ellipse(img, (cx, cy), (rx, ry), 0, 0, 360, dark, 2, cv2.LINE_AA)
    for dx in (-rx // 3, rx // 3):
        cv2.circle(img, (cx + dx, cy - ry // 4), 8, (250, 250, 240), -1, cv2.LINE_AA)
        cv2.circle(img, (cx + dx - 2, cy - ry // 4 + 1), 4, (20, 10, 10), -1, cv2.LINE_AA)
    cv2.line(img, (cx - rx // 3, cy + ry // 3), (cx + rx // 3, cy + ry // 3), dark, 3, cv2.LINE_AA)
