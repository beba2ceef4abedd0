"""Where things lie on the card game's 1280x720 screen: its fixed buttons, and the boxes of
the map's nodes, the hand's cards, the enemies and the reward cards in a given state."""

from __future__ import annotations

from kgagent.envs.cardgame_state import State, reachable_lanes

W, H = 1280, 720

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


def node_center(s: State, floor: int, lane: int) -> tuple[int, int]:
    """The centre of a map node on the screen."""
    base = max(1, s.floor)  # the row of the current floor sits at the bottom
    return MAP_LANES[lane], MAP_BOTTOM - (floor - base) * MAP_STEP


def map_choices(s: State) -> list[tuple[int, tuple[int, int, int, int]]]:
    """(lane, box) of every node of the next floor that may be entered."""
    out = []
    for lane in reachable_lanes(s):
        cx, cy = node_center(s, s.floor + 1, lane)
        out.append((lane, (cx - NODE_R, cy - NODE_R, 2 * NODE_R, 2 * NODE_R)))
    return out


def hand_boxes(s: State) -> list[tuple[int, int, int, int]]:
    """The box of each card in the hand (the selected card raised)."""
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


def enemy_boxes(s: State) -> list[tuple[int, int, int, int]]:
    """The box each enemy is drawn in."""
    n = len(s.enemies)
    xs = ENEMY_X[3 - n :] if n < 3 else ENEMY_X
    if n == 1:
        xs = (870,)
    w, h = ENEMY_BOX
    return [(cx - w // 2, 150, w, h) for cx in xs[:n]]


def enemy_hitboxes(s: State) -> list[tuple[int, int, int, int]]:
    """Where a click targets an enemy: its whole column, intent and HP bar included."""
    return [(x - 5, 60, w + 10, 410) for x, _y, w, _h in enemy_boxes(s)]


def reward_boxes(s: State) -> list[tuple[int, int, int, int]]:
    """The box of each card offered after a won fight."""
    w, h = REWARD_CARD
    return [(x, 250, w, h) for x in REWARD_CARD_X[: len(s.reward_cards)]]
