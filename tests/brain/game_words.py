"""Words that would betray knowledge of a particular program (whole-word match)."""

GAME_WORDS = (
    "spire",
    "civilization",
    "civ",
    "minecraft",
    "card",
    "deck",
    "relic",
    "potion",
    "turn",
    "tech",
    "floor",
    "slay",
)
