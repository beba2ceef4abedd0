"""Named Cypher queries, loaded from the ``queries/`` folder (aiosql style).

Each ``*.cypher`` file holds blocks that start with ``// name: some_name``;
comment lines right after the name are the query's description. Parameters
are always ``$bound``, never formatted into the text.

A file whose name starts with ``_`` (``_transaction.cypher``) holds *internal*
queries: statements the memory issues itself and that mean nothing alone
(``BEGIN TRANSACTION``). :func:`public` leaves them out (``kgagent query --list``)
and :meth:`kgagent.memory.Memory.run_named` refuses them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources

from kgagent.errors import QueryError
from kgagent.memory import guard
from kgagent.memory.cypher_lexer import blank_strings_and_comments

_NAME = re.compile(r"^//\s*name:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")


@dataclass(frozen=True)
class NamedQuery:
    name: str
    text: str
    doc: str
    source: str

    @property
    def params(self) -> list[str]:
        return params_of(self.text)

    @property
    def writes(self) -> str | None:
        return writes(self.text)

    @cached_property
    def mutates(self) -> bool:
        """Writes the graph or reaches outside it (cached: the memory asks on every call)."""
        return bool(writes(self.text))

    @property
    def internal(self) -> bool:
        """Issued by the memory itself (its file's name starts with ``_``)."""
        return self.source.startswith("_")


def params_of(text: str) -> list[str]:
    """The ``$parameters`` a Cypher text uses, in order of first use (strings and comments skipped)."""
    return guard.params_of(text)


def strip_strings(text: str) -> str:
    """Cypher text with string literals and comments blanked (for keyword checks)."""
    return blank_strings_and_comments(text)


def writes(text: str) -> str | None:
    """What makes ``text`` more than a read (it writes, or reaches files or settings), or None.

    The tokenizer-based check of :mod:`kgagent.memory.guard`.
    """
    v = guard.classify(text)
    return v.writes or v.files


def parse(text: str, source: str) -> dict[str, NamedQuery]:
    blocks: dict[str, NamedQuery] = {}
    name: str | None = None
    doc: list[str] = []
    body: list[str] = []

    def flush() -> None:
        if name is None:
            return
        q = "\n".join(body).strip().rstrip(";").strip()
        if not q:
            raise QueryError(f"named query {name!r} in {source} is empty")
        if name in blocks:
            raise QueryError(f"named query {name!r} is defined twice ({source})")
        blocks[name] = NamedQuery(name, q, " ".join(doc).strip(), source)

    for line in text.splitlines():
        m = _NAME.match(line.strip())
        if m:
            flush()
            name, doc, body = m.group(1), [], []
            continue
        if name is None:
            continue
        if not body and line.strip().startswith("//"):
            doc.append(line.strip()[2:].strip())
        else:
            body.append(line)
    flush()
    return blocks


@lru_cache(maxsize=1)
def load_all() -> dict[str, NamedQuery]:
    out: dict[str, NamedQuery] = {}
    folder = resources.files("kgagent.queries")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".cypher"):
            for name, q in parse(entry.read_text(encoding="utf-8"), entry.name).items():
                if name in out:
                    raise QueryError(
                        f"named query {name!r} defined in {out[name].source} and {entry.name}"
                    )
                out[name] = q
    return out


def public() -> list[NamedQuery]:
    """The queries a user may run by name (internal ones left out), by file and name."""
    return sorted(
        (q for q in load_all().values() if not q.internal), key=lambda q: (q.source, q.name)
    )


def get(name: str) -> NamedQuery:
    qs = load_all()
    if name not in qs:
        raise QueryError(f"no named query {name!r}; `kgagent query --list` shows them")
    return qs[name]
