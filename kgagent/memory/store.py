"""The memory API: one directory of experience, one small object to use it.

A memory directory holds::

    manifest.json   schema version, kgagent version, engine, encoder identity/dim, times
    graph.db        the Kùzu / LadybugDB database (source of truth for the graph)
    vectors/        the LanceDB table of state features (and its journal)
    blobs/          content-addressed PNGs (object crops, state thumbnails)
    runs/           JSONL step logs of `kgagent play`
    backups/        copies taken before a schema migration

:class:`Memory` is composed of one part per job: opening and closing
(:mod:`~kgagent.memory.lifecycle`), states (:mod:`~kgagent.memory.states`), skills
(:mod:`~kgagent.memory.skills`), objects (:mod:`~kgagent.memory.objects`), clusters
(:mod:`~kgagent.memory.clusters`), input statistics (:mod:`~kgagent.memory.inputs`)
and reports (:mod:`~kgagent.memory.report`); what
they share is :class:`~kgagent.memory.core.MemoryCore`. Every operation is a named
query from ``queries/`` with bound parameters. See docs/memory.md for the
consistency rules between the graph and the vectors.
"""

from __future__ import annotations

from kgagent.memory.clusters import Clusters
from kgagent.memory.core import EncoderSpec, new_id
from kgagent.memory.inputs import Inputs
from kgagent.memory.lifecycle import Lifecycle
from kgagent.memory.objects import Objects
from kgagent.memory.report import Report
from kgagent.memory.skills import Skills, fitness_term, sigmoid, skill_edge_weight
from kgagent.memory.states import States

__all__ = ["EncoderSpec", "Memory", "fitness_term", "new_id", "sigmoid", "skill_edge_weight"]


class Memory(Lifecycle, States, Skills, Objects, Clusters, Inputs, Report):
    """The agent's persistent experience: SA-KG, procedural memory, vectors, blobs.

    Open it with :meth:`Memory.open` (a context manager); it implements
    :class:`kgagent.agent.protocols.MemoryAPI`.
    """
