"""The card game's content: its cards, enemies, encounter groups and the numbers of a run."""

from __future__ import annotations

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

SCORE_FLOOR, SCORE_KILL, SCORE_ELITE, SCORE_BOSS = 5, 2, 10, 50


def card_stats(name: str, upgraded: bool) -> tuple[int, str, bool, int, int, str]:
    """A card's (cost, kind, needs_target, damage, block, description), upgraded or not."""
    cost, kind, tgt, dmg, blk, desc = CARDS[name]
    if upgraded:
        dmg = dmg + 3 if dmg else 0
        blk = blk + 3 if blk else 0
        desc = desc.replace(f"Deal {CARDS[name][3]}", f"Deal {dmg}").replace(
            f"Gain {CARDS[name][4]}", f"Gain {blk}"
        )
    return cost, kind, tgt, dmg, blk, desc
