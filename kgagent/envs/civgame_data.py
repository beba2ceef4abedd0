"""The civ game's content: its technologies, what the city can build, and the numbers of
the city's defence and of the barbarians' raids."""

from __future__ import annotations

# name: (cost in science, prerequisites, column, row)
TECHS: dict[str, tuple[int, tuple[str, ...], int, int]] = {
    "Agriculture": (0, (), 0, 3),
    "Pottery": (20, ("Agriculture",), 1, 1),
    "Animal Husbandry": (20, ("Agriculture",), 1, 2),
    "Archery": (20, ("Agriculture",), 1, 4),
    "Mining": (20, ("Agriculture",), 1, 5),
    "Sailing": (40, ("Pottery",), 2, 0),
    "Calendar": (40, ("Pottery",), 2, 1),
    "Writing": (40, ("Pottery",), 2, 2),
    "The Wheel": (40, ("Animal Husbandry",), 2, 3),
    "Masonry": (40, ("Mining",), 2, 5),
    "Bronze Working": (40, ("Mining",), 2, 6),
    "Optics": (70, ("Sailing",), 3, 0),
    "Philosophy": (70, ("Writing", "Calendar"), 3, 1),
    "Mathematics": (70, ("The Wheel", "Archery"), 3, 3),
    "Construction": (70, ("Masonry", "The Wheel"), 3, 4),
    "Currency": (70, ("Bronze Working",), 3, 5),
    "Iron Working": (70, ("Bronze Working",), 3, 6),
    "Drama": (110, ("Philosophy",), 4, 0),
    "Civil Service": (110, ("Philosophy",), 4, 1),
    "Engineering": (110, ("Construction", "Mathematics"), 4, 3),
    "Guilds": (110, ("Currency",), 4, 5),
    "Metal Casting": (110, ("Iron Working",), 4, 6),
    "Education": (160, ("Civil Service", "Drama"), 5, 1),
    "Machinery": (160, ("Engineering",), 5, 3),
    "Chivalry": (160, ("Civil Service", "Guilds"), 5, 5),
}
# name: (cost in production, tech needed, repeatable, short effect)
ITEMS: dict[str, tuple[int, str, bool, str]] = {
    "Monument": (40, "Agriculture", False, "+2 culture"),
    "Shrine": (40, "Pottery", False, "+1 science, +1 culture"),
    "Granary": (50, "Pottery", False, "+2 food"),
    "Warrior": (25, "Agriculture", True, "defends the city (+4)"),
    "Archer": (35, "Archery", True, "defends the city (+6)"),
    "Walls": (60, "Masonry", False, "+8 city defence"),
    "Library": (60, "Writing", False, "+3 science"),
    "Water Mill": (60, "The Wheel", False, "+2 production, +1 food"),
    "Forge": (80, "Bronze Working", False, "+2 production"),
    "Market": (80, "Currency", False, "+3 gold"),
    "Amphitheater": (90, "Drama", False, "+3 culture"),
    "University": (120, "Education", False, "+4 science"),
}
MAX_GARRISON = {"Warrior": 3, "Archer": 3}
CITY_MAX_HP = 30
BARB_FIRST_TURN = 12
BARB_EVERY = 6
