"""Named Cypher queries, loaded from the ``queries/`` folder (aiosql style).

Each ``*.cypher`` file holds blocks that start with ``// name: some_name``;
comment lines right after the name are the query's description. Parameters
are always ``$bound``, never formatted into the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from kgagent.errors import QueryError

_NAME = re.compile(r"^//\s*name:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_WRITE = re.compile(
    r"\b(CREATE|MERGE|SET|DELETE|DETACH|REMOVE|DROP|ALTER|COPY|IMPORT|EXPORT|ATTACH|"
    r"INSTALL|LOAD|BEGIN|COMMIT|ROLLBACK|CHECKPOINT|USE)\b",
    re.IGNORECASE,
)
_WRITE_CALL = re.compile(r"\bCALL\s+(?!show_|table_info|current_setting|db_version|table_)", re.I)


@dataclass(frozen=True)
class NamedQuery:
    name: str
    text: str
    doc: str
    source: str

    @property
    def params(self) -> list[str]:
        seen: list[str] = []
        for p in _PARAM.findall(strip_strings(self.text)):
            if p not in seen:
                seen.append(p)
        return seen

    @property
    def writes(self) -> bool:
        return writes(self.text)


def strip_strings(text: str) -> str:
    """Cypher text with string literals and comments blanked (for keyword checks)."""
    out = re.sub(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|`[^`]*`", "''", text)
    out = re.sub(r"//[^\n]*|/\*.*?\*/", " ", out, flags=re.S)
    return out


def writes(text: str) -> str | None:
    """The first keyword that makes ``text`` write, or None for a read-only query."""
    bare = strip_strings(text)
    m = _WRITE.search(bare)
    if m:
        return m.group(1).upper()
    m = _WRITE_CALL.search(bare)
    return "CALL" if m else None


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


def get(name: str) -> NamedQuery:
    qs = load_all()
    if name not in qs:
        raise QueryError(f"no named query {name!r}; `kgagent query --list` shows them")
    return qs[name]
