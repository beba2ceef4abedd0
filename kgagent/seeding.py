"""The random numbers of a player (the agent, its ablations, a harness baseline), drawn
apart from the world's.

A world seeded through Gymnasium (``env.reset(seed=s)``) draws from
``np.random.default_rng(s)``: ``gymnasium.utils.seeding.np_random`` builds that very
generator. A player seeded with ``default_rng(s)`` as well would draw the same numbers
as the world, and on a game that lights one of four buttons at random it would press the
lit one every time, by chance alone. A player's generator is therefore a child of the
seed's ``SeedSequence`` under a key of its own: reproducible from the run's seed alone,
independent of every stream seeded with the seed itself or spawned from it in order.
"""

from __future__ import annotations

import numpy as np

#: the spawn key of a player's stream ("KG"); a world that spawns children of its own
#: seed gets keys 0, 1, 2, …
PLAYER_KEY = 0x4B47


def player_rng(seed: int) -> np.random.Generator:
    """The generator of a player seeded with ``seed`` (see the module's docstring)."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(PLAYER_KEY,)))
