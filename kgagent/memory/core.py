"""What every part of :class:`kgagent.memory.Memory` shares: the open database, named
queries, id allocation and the vector mirror.

The memory is one class composed of small parts, one per kind of node (``states``,
``skills``, ``objects``, ``clusters``), its lifecycle (``lifecycle``) and its reports
(``report``). Each part inherits :class:`MemoryCore`, which holds the state they
share, so the parts read as one object without passing it around.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from kgagent.config import Config
from kgagent.errors import MemoryStoreError, QueryError, ReadOnlyViolation
from kgagent.memory import guard, queries
from kgagent.memory.engine import GraphDB
from kgagent.memory.files import BlobStore
from kgagent.memory.vectors import VectorStore
from kgagent.records import Skill, UIObject

#: A user query's watchdog allows this much beyond its own timeout.
WATCH_MARGIN_S = 30.0


@dataclass(frozen=True)
class EncoderSpec:
    """What the memory must know of the state encoder."""

    identity: str
    dim: int
    thresholds: tuple[float, float]  # the encoder's default (θ_merge, θ_simi)
    #: The weights file (or pretrained tag) it was loaded from, recorded so that a
    #: refusal can say what to set; None when there is none (pixel, in-memory models).
    weights: str | None = None
    #: Identities earlier versions gave these same weights: a memory recorded under
    #: one of them accepts this encoder's features.
    aliases: tuple[str, ...] = ()

    @classmethod
    def of(cls, encoder: Any) -> EncoderSpec:
        return cls(
            encoder.identity,
            int(encoder.dim),
            tuple(encoder.default_thresholds),
            getattr(encoder, "weights", None),
            tuple(getattr(encoder, "aliases", ())),
        )


def new_id(prefix: str, seq: int) -> str:
    """``prefix-<sequence>-<random>``: unique across machines, ordered by creation.

    The random part keeps keys unique when memories from different machines are
    combined; the zero-padded sequence (per memory and kind) makes ids sort in
    creation order, so every tie broken "by id" is reproducible under a seed.
    """
    return f"{prefix}-{seq:07d}-{uuid.uuid4().hex[:10]}"


#: The random part of ids made by :func:`new_id`, after their prefix and sequence.
_RANDOM_PART = re.compile(r"\b([skoc]-\d{7})-[0-9a-f]{10}\b")


def without_random_part(text: str) -> str:
    """``text`` with every id's random part dropped (``s-0000012-ab12…`` -> ``s-0000012``):
    what two runs of one seed, or two versions of one command, are compared by."""
    return _RANDOM_PART.sub(r"\1", text)


class MemoryCore:
    """The state the parts of the memory share, and the calls they all make."""

    path: Path
    config: Config
    read_only: bool
    manifest: dict[str, Any]
    engine: str
    encoder: dict[str, Any] | None
    theta_merge: float
    theta_simi: float
    blobs: BlobStore
    vectors: VectorStore | None
    _db: GraphDB | None
    _consistency: dict[str, int]
    _vectors_loaded: bool
    _seq: dict[str, int]  # last sequence number per id prefix (s, k, o, c)
    _skills: dict[str, Skill]  # every skill, by id (kgagent.memory.skills)
    _objects: dict[str, UIObject]  # every object, by id (kgagent.memory.objects)

    # ============================================================ queries
    def _q(self, query_name: str, /, **params: Any) -> list[dict[str, Any]]:
        if self._db is None:
            raise MemoryStoreError("this memory is closed")
        q = queries.get(query_name)
        return self._db.execute(q.text, params, writes=q.mutates)

    def run_named(
        self,
        name: str,
        params: dict[str, Any] | None = None,
        *,
        write: bool = False,
        allow_files: bool = False,
    ) -> list[dict[str, Any]]:
        """Run a named query (as ``kgagent query --name`` does); internal ones are refused."""
        q = self.named_query(name, params)
        return self.cypher(q.text, params, write=write, allow_files=allow_files)

    def named_query(self, name: str, params: dict[str, Any] | None) -> queries.NamedQuery:
        """The named query, once it may run alone and all its parameters are bound."""
        q = queries.get(name)
        refuse_internal(q)
        missing = [p for p in q.params if p not in (params or {})]
        if missing:
            raise QueryError(
                f"query {name!r} needs parameter(s): {', '.join(missing)} (--param {missing[0]}=...)"
            )
        return q

    def cypher(
        self,
        text: str,
        params: dict[str, Any] | None = None,
        *,
        write: bool = False,
        allow_files: bool = False,
    ) -> list[dict[str, Any]]:
        """Run any Cypher and return every row. See :meth:`cypher_rows`."""
        with self.cypher_rows(text, params, write=write, allow_files=allow_files) as rows:
            return list(rows)

    @contextmanager
    def cypher_rows(
        self,
        text: str,
        params: dict[str, Any] | None = None,
        *,
        write: bool = False,
        allow_files: bool = False,
        timeout: float | None = None,
    ) -> Iterator[Iterator[dict[str, Any]]]:
        """Run any Cypher; the rows one at a time, so a caller can stop after a few.

        Read-only unless ``write``. A query that reaches files, extensions or
        settings (``COPY``, ``LOAD``, ``ATTACH``, ``CALL threads = 4`` …) is refused
        unless ``allow_files`` (trusted callers: a benchmark loading Parquet);
        :mod:`kgagent.memory.guard` reads the query token by token. A query that is
        not ``write`` runs on a read-only database, or in a read-only transaction
        of a writable one, so the engine refuses a write the check missed. A
        ``$parameter`` the query uses but ``params`` lacks is refused too: both
        engines would bind it to null and quietly return nothing. ``timeout``
        (seconds, 0: none) lets the engine stop a long query.
        """
        v = guard.check(text, write=write, allow_files=allow_files)
        if (v.writes or v.files) and self.read_only and write:
            raise ReadOnlyViolation("this memory is open read-only; a writing query cannot run")
        unbound = [p for p in v.params if p not in (params or {})]
        if unbound:
            raise QueryError(
                f"the query uses parameter(s) {', '.join('$' + p for p in unbound)}; "
                f"bind them in params ({{{unbound[0]!r}: ...}})"
            )
        db = self._db
        if db is None:
            raise MemoryStoreError("this memory is closed")
        watch = 0.0  # a caller's own query may run long (a bulk COPY): no watchdog by default
        if timeout is not None:
            db.set_timeout(timeout)
            watch = 0.0 if timeout <= 0 else max(db.commit_timeout, timeout + WATCH_MARGIN_S)
        read_tx = not write and not self.read_only and not db.in_transaction
        try:
            if read_tx:
                db.begin(read_only=True)
            rows = db.stream(text, params or {}, writes=bool(v.writes), watch=watch)
            try:
                yield _WholeNumbers(rows)
            finally:
                rows.close()
            if read_tx:
                db.commit()
                read_tx = False
        finally:
            if read_tx:
                db.rollback()
            if timeout is not None:
                db.set_timeout(0)

    # ================================================================ ids
    def _next_id(self, prefix: str) -> str:
        self._seq[prefix] = self._seq.get(prefix, 0) + 1
        return new_id(prefix, self._seq[prefix])

    # ============================================================ vectors
    def _load_vectors(self) -> None:
        """Mirror the committed vectors; read-write opens also delete crash leftovers."""
        if self._vectors_loaded or self.vectors is None:
            return
        # A State without a revision (written by hand with `kgagent query --write`) has no
        # vector: -1 matches no row, so `memory check` reports it instead of failing.
        committed = {
            r["id"]: -1 if r["feature_rev"] is None else int(r["feature_rev"])
            for r in self._q("state_revisions")
        }
        self._consistency = self.vectors.load(committed)
        if not self.read_only:
            self._consistency["rows_removed"] = self.vectors.reconcile(committed)
        self._vectors_loaded = True

    def _need_vectors(self) -> VectorStore:
        if self.vectors is None:
            raise MemoryStoreError(
                "this memory was opened without an encoder; pass encoder=EncoderSpec(...)"
            )
        self._load_vectors()
        return self.vectors

    @property
    def consistency(self) -> dict[str, int]:
        """What the last load found inconsistent between graph and vectors (and repaired)."""
        self._load_vectors()
        return self._consistency


class _WholeNumbers(Iterator[dict[str, Any]]):
    """The rows, with the engines' 128-bit integers (``sum()`` of integers, a
    ``DECIMAL(p, 0)``) as ``int``: both give them as ``decimal.Decimal('47')``. Its
    ``columns`` are the result's (:class:`kgagent.memory.engine.Rows`)."""

    def __init__(self, rows: Iterator[dict[str, Any]]) -> None:
        self._rows = rows
        self.columns: list[str] | None = getattr(rows, "columns", None)

    def __next__(self) -> dict[str, Any]:
        return {
            k: int(v)
            if isinstance(v, Decimal) and v.is_finite() and v.as_tuple().exponent >= 0
            else v
            for k, v in next(self._rows).items()
        }


def refuse_internal(q: queries.NamedQuery) -> None:
    """A query internal to the memory (a transaction's statement) is refused by name."""
    if q.internal:
        raise QueryError(
            f"query {q.name!r} is internal to the memory ({q.source}) and cannot run alone"
        )
