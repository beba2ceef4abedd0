"""Drawing the card game's screen: the map, a fight, the reward and rest screens, the end
screen, the top bar and the pile overlays, from a run's state."""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

from kgagent.envs import render as R
from kgagent.envs.cardgame_data import BOSS_FLOOR, CARDS, ENEMIES, ENERGY, card_stats
from kgagent.envs.cardgame_layout import (
    CARD_W,
    CLOSE_BTN,
    DECK_BTN,
    DISCARD_PILE,
    DRAW_PILE,
    END_TURN,
    ENERGY_ORB,
    NODE_R,
    REST_BTN,
    SKIP_BTN,
    SMITH_BTN,
    TOP_BAR,
    H,
    W,
    enemy_boxes,
    hand_boxes,
    node_center,
    reward_boxes,
)
from kgagent.envs.cardgame_state import State, reachable_lanes, score, selected_needs_target


def render(s: State) -> np.ndarray:
    """The frame of the state: its screen, the top bar, and an open pile overlay."""
    if s.screen == "map":
        img = _render_map(s)
    elif s.screen == "fight":
        img = _render_fight(s)
    elif s.screen == "reward":
        img = _render_reward(s)
    elif s.screen == "rest":
        img = _render_rest(s)
    else:
        img = _render_end(s)
    if s.screen not in ("gameover", "victory"):
        _render_top(s, img)
    if s.overlay:
        _render_overlay(s, img)
    return img


def _render_top(s: State, img: np.ndarray) -> None:
    R.fill(img, (0, 0, W, TOP_BAR), (24, 22, 28))
    R.fill(img, (0, TOP_BAR - 2, W, 2), (90, 70, 40))
    R.text(img, "Ironclad", 16, 22, 0.7, R.WHITE, 1, "lm", R.FONT_BOLD)
    R.icon_heart(img, 170, 22, 11)
    R.text(img, f"{s.hp}/{s.max_hp}", 190, 22, 0.6, (240, 120, 110), 1, "lm")
    R.icon_coin(img, 300, 22, 10)
    R.text(img, str(s.gold), 318, 22, 0.6, R.GOLD, 1, "lm")
    R.text(img, f"Floor {s.floor}", 640, 22, 0.65, R.WHITE, 1, "cm")
    R.button(img, DECK_BTN, f"Deck ({len(s.deck)})", (70, 55, 40), R.WHITE, (160, 130, 80), 0.55)


def _render_map(s: State) -> np.ndarray:
    img = _map_bg().copy()
    R.text(img, "Choose your next room", 640, 80, 0.9, (60, 40, 20), 2, "cm", R.FONT_BOLD)
    base = max(1, s.floor)
    reach = set(reachable_lanes(s))
    # edges first
    for f in range(base, min(len(s.game_map) - 1, base + 5)):
        for n in s.game_map[f]:
            for m in s.game_map[f + 1]:
                if abs(m.lane - n.lane) <= 1 or f + 1 == BOSS_FLOOR:
                    p, q = node_center(s, f, n.lane), node_center(s, f + 1, m.lane)
                    if q[1] > 110:
                        cv2.line(img, p, q, (150, 120, 80), 2, cv2.LINE_AA)
    for f in range(base, min(len(s.game_map), base + 6)):
        for n in s.game_map[f]:
            cx, cy = node_center(s, f, n.lane)
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
        fy = node_center(s, f, 0)[1]
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


def _render_fight(s: State) -> np.ndarray:
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
    for e, box in zip(s.enemies, enemy_boxes(s)):
        x, y, w, h = box
        cx = x + w // 2
        if e.hp <= 0:
            R.text(img, "defeated", cx, y + h // 2, 0.5, (120, 110, 110), 1, "cm")
            continue
        targeting = selected_needs_target(s)
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
    R.button(img, DRAW_PILE, f"Draw {len(s.draw)}", (60, 60, 80), R.WHITE, (150, 150, 170), 0.55)
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
    boxes = hand_boxes(s)
    order = [i for i in range(len(boxes)) if i != s.selected] + (
        [s.selected] if s.selected is not None else []
    )
    for i in order:
        deck_idx = s.hand[i]
        up = deck_idx in s.upgraded
        cost, kind, _t, _dm, _b, desc = card_stats(s.deck[deck_idx], up)
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
    if selected_needs_target(s):
        R.text(img, "Choose a target", 870, 470, 0.6, (250, 220, 120), 1, "cm")
    return img


def _render_reward(s: State) -> np.ndarray:
    img = _fight_bg().copy()
    R.blend(img, (0, 0, W, H), (0, 0, 0), 0.55)
    R.panel(img, (290, 90, 700, 560), (40, 36, 44), (190, 150, 80), 12, 3)
    R.text(img, "Victory!", 640, 130, 1.1, R.GOLD, 2, "cm", R.FONT_BOLD)
    R.icon_coin(img, 560, 185, 12)
    R.text(img, f"+{s.reward_gold} gold", 580, 185, 0.65, R.GOLD, 1, "lm")
    R.text(img, "Choose a card to add to your deck", 640, 228, 0.6, R.WHITE, 1, "cm")
    for name, box in zip(s.reward_cards, reward_boxes(s)):
        cost, kind, _t, _d, _b, desc = CARDS[name]
        R.card(img, box, name, cost, kind, desc)
    R.button(img, SKIP_BTN, "Skip", (80, 60, 50), R.WHITE, (190, 150, 80), 0.7)
    return img


def _render_rest(s: State) -> np.ndarray:
    img = _rest_bg().copy()
    R.text(img, "Rest Site", 640, 110, 1.1, (250, 220, 160), 2, "cm", R.FONT_BOLD)
    heal = min(s.max_hp - s.hp, int(s.max_hp * 0.3))
    R.button(img, REST_BTN, f"Rest (+{heal} HP)", (70, 100, 60), R.WHITE, (200, 220, 160), 0.65)
    R.button(img, SMITH_BTN, "Smith (upgrade)", (100, 80, 60), R.WHITE, (220, 190, 150), 0.65)
    return img


def _render_end(s: State) -> np.ndarray:
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
    R.text(img, f"Enemies slain: {s.kills}   Elites: {s.elites}", 640, 380, 0.8, R.WHITE, 1, "cm")
    R.text(img, f"Score: {score(s)}", 640, 450, 1.0, R.GOLD, 2, "cm")
    return img


def _render_overlay(s: State, img: np.ndarray) -> None:
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
        cost, kind, _t, _dm, _b, desc = card_stats(s.deck[i], up)
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
