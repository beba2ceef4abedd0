"""How a config field is declared, checked, read from text and described.

Every field of :mod:`kgagent.config` is declared with :func:`param`: its
default plus metadata that says where the default comes from (``source``:
``paper: <where>`` or ``ours``), one line of ``why``, and the values it
allows. From that one declaration, :class:`FieldSpec` checks a value
(:func:`refusal`), turns TOML or ``--set`` text into the field's type
(:func:`coerce`), and says in words what is allowed, both in refusals and in
docs/config.md. Keeping the rule beside the default means a new field cannot be
added without a range, and the docs cannot disagree with the check.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import os
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from kgagent.errors import ConfigError


class Section:
    """A config section (a dataclass of :func:`param` fields) set from code: a name it has
    no field for is refused, naming the closest field, instead of being kept and ignored
    (``cfg.memory.thetamerge = 0.5``); TOML and ``--set`` refuse those already."""

    __slots__ = ()
    #: the section's name in TOML and ``--set`` (``memory``), set by kgagent.config from its fields
    SECTION = ""

    def __setattr__(self, name: str, value: Any) -> None:
        known = self.__dataclass_fields__  # type: ignore[attr-defined]
        if name not in known and not name.startswith("_"):
            close = closest(name, known)
            hint = f"; did you mean {self.SECTION}.{close}?" if close else ""
            raise ConfigError(
                f"{self.SECTION}.{name} is not a config field{hint} (docs/config.md lists them)"
            )
        object.__setattr__(self, name, value)


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name a misspelt ``name`` most likely meant (``thetamerge``: ``theta_merge``),
    or None; the one rule for every "did you mean" of the config (code, TOML, ``--set``)."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return close[0] if close else None


def in_code(v: Any, kind: str) -> Any:
    """A value set from code in the field's type where nothing is lost: a path for a
    string field, a numpy scalar, a list for a tuple (TOML's own values pass unchanged)."""
    if isinstance(v, list):
        return tuple(in_code(x, kind) for x in v)
    if isinstance(v, tuple):
        return tuple(in_code(x, kind) for x in v) if any(_foreign(x) for x in v) else v
    if kind == "str" and isinstance(v, os.PathLike):
        return os.fspath(v)
    if _foreign(v) and not isinstance(v, os.PathLike):
        v = v.item()
    return _widen(v, kind) if kind in ("int", "float") and not isinstance(v, str) else v


def _foreign(v: Any) -> bool:
    """A numpy scalar (``np.int64(10)``), or a path."""
    return isinstance(v, os.PathLike) or (
        type(v).__module__ == "numpy" and hasattr(v, "item") and getattr(v, "ndim", 1) == 0
    )


def param(
    default: Any,
    source: str,
    why: str,
    allowed: str = "",
    *,
    nonempty: bool = False,
    check: Callable[[Any], bool] | None = None,
) -> Any:
    """A dataclass field with its provenance and its allowed values.

    ``allowed``: ``[a, b]`` / ``(a, b)`` / ``[a, b)`` intervals, ``>= a``, ``> a``,
    ``a | b | c`` choices, or empty (any value of the field's type). For a tuple it
    holds for every element; ``nonempty`` asks for at least one element. ``check``
    replaces the parsed rule (``allowed`` is then only its description).
    """
    if check is None:
        _rule(allowed)  # a rule that does not parse fails at import, not at a user's value
    meta = {"source": source, "why": why, "allowed": allowed, "nonempty": nonempty}
    if check is not None:
        meta["check"] = check
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class FieldSpec:
    """What one field holds: its type, its allowed values and its provenance."""

    name: str  # section.field
    kind: str  # bool | int | float | str
    optional: bool  # None is allowed
    length: int | None  # None: a scalar; -1: a tuple of any length; n: exactly n
    allowed: str
    nonempty: bool
    check: Callable[[Any], bool] | None
    source: str
    why: str

    def describe(self) -> str:
        """What is allowed, in words (the end of every refusal, a column of the docs)."""
        rule = self.allowed if self.check else _rule_text(self.allowed)
        if self.length is None:
            word = _WORDS[self.kind][0]
            text = rule if rule.startswith("one of") else f"{word} {rule}".strip()
        else:
            count = f"{self.length}" if self.length > 0 else "a list of"
            text = f"{count} {_WORDS[self.kind][1]}"
            text += f" ({rule})" if self.check else f" {rule}" if rule else ""
            text += ", at least one" if self.nonempty else ""
        return text + (" (or none)" if self.optional else "")


_WORDS = {
    "bool": ("true or false", "booleans"),
    "int": ("an integer", "integers"),
    "float": ("a number", "numbers"),
    "str": ("a non-empty string", "non-empty strings"),
}


@functools.cache
def spec_of(cls: type, section: str, name: str) -> FieldSpec:
    """The :class:`FieldSpec` of field ``name`` of the section dataclass ``cls``."""
    f = next(f for f in fields(cls) if f.name == name)
    hint = typing.get_type_hints(cls)[name]
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    args = list(typing.get_args(hint)) if union else [hint]
    optional = type(None) in args
    base, length = next(a for a in args if a is not type(None)), None
    if typing.get_origin(base) is tuple:
        inner = typing.get_args(base)
        length = -1 if len(inner) == 2 and inner[1] is Ellipsis else len(inner)
        base = inner[0]
    meta = f.metadata
    return FieldSpec(
        name=f"{section}.{name}",
        kind=base.__name__,
        optional=optional,
        length=length,
        allowed=meta.get("allowed", ""),
        nonempty=bool(meta.get("nonempty")),
        check=meta.get("check"),
        source=meta.get("source", ""),
        why=meta.get("why", ""),
    )


_INTERVAL = re.compile(r"^([\[(])\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*([\])])$")
_BOUND = re.compile(r"^(>=|>)\s*(-?[\d.]+)$")


def _choices(spec: FieldSpec) -> set[str]:
    """The values a field of choices allows (``auto | ocr | none``); empty for others."""
    text = spec.allowed.strip()
    return {c.strip() for c in text.split("|")} if "|" in text and not spec.check else set()


@functools.cache
def _rule(allowed: str) -> Callable[[Any], bool]:
    """The test an ``allowed`` text stands for; unknown syntax is a programming error."""
    text = allowed.strip()
    if not text:
        return lambda v: True
    if m := _INTERVAL.match(text):
        lo, hi, lo_closed, hi_closed = float(m[2]), float(m[3]), m[1] == "[", m[4] == "]"
        return lambda v: (v >= lo if lo_closed else v > lo) and (v <= hi if hi_closed else v < hi)
    if m := _BOUND.match(text):
        b, closed = float(m[2]), m[1] == ">="
        return lambda v: v >= b if closed else v > b
    if "|" in text:
        choices = {c.strip() for c in text.split("|")}
        return lambda v: v in choices
    raise ValueError(f"config rule {allowed!r} is not understood")


def _rule_text(allowed: str) -> str:
    text = allowed.strip()
    if "|" in text:
        return "one of " + ", ".join(c.strip() for c in text.split("|"))
    if text.startswith(("[", "(")):
        return f"in {text}"
    return text


def _typed(kind: str, v: Any) -> bool:
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "float":
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return isinstance(v, str) and v.strip() != ""


#: The largest size a real number in the configuration may have: what such a setting
#: means (seconds, pixels, weights) stays far below it, and beyond it arithmetic on it
#: overflows (a distance squared) in the middle of a run.
MAX_MAGNITUDE = 1e15
#: Integers (counts, lengths, a seed: a nanosecond timestamp is a fine one) fit 64 bits.
MAX_INT = 2**63 - 1


def _out_of_range(spec: FieldSpec, v: Any) -> str | None:
    """The refusal of a number too large, or of text that is not Unicode (bytes from the
    command line that are not UTF-8: a config file written from it could not be read)."""
    for x in v if isinstance(v, tuple) else (v,):
        if isinstance(x, int) and not isinstance(x, bool) and abs(x) > MAX_INT:
            return f"{spec.name} = {show(v)}: too large (an integer of at most 64 bits)"
        if isinstance(x, float) and math.isfinite(x) and abs(x) > MAX_MAGNITUDE:
            return f"{spec.name} = {show(v)}: too large (at most {MAX_MAGNITUDE:g} in size)"
        if isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                return f"{spec.name}: the value is not UTF-8 text"
    return None


def refusal(spec: FieldSpec, v: Any) -> str | None:
    """None when ``v`` is allowed, else the one-line refusal naming field, value and rule."""
    if v is not None and (why := _out_of_range(spec, v)):
        return why
    if v is None:
        ok = spec.optional
    elif spec.length is not None:
        ok = (
            isinstance(v, tuple)
            and (spec.length < 0 or len(v) == spec.length)
            and (len(v) > 0 or not spec.nonempty)
            and all(_typed(spec.kind, x) for x in v)
            and (spec.check is not None or all(_rule(spec.allowed)(x) for x in v))
        )
    else:
        ok = _typed(spec.kind, v) and (spec.check is not None or _rule(spec.allowed)(v))
    if ok and spec.check is not None and v is not None:
        ok = bool(spec.check(v))
    return None if ok else f"{spec.name} = {show(v)}: must be {spec.describe()}"


def show(v: Any) -> str:
    """A value as a user would write it in TOML (``none`` for no value)."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, tuple | list):
        return "[" + ", ".join(show(x) for x in v) + "]"
    return repr(v)


def parse_override(raw: str, spec: FieldSpec) -> Any:
    """An override's text as a value: TOML when it parses, else the text itself."""
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw  # a bare string ("gpt-4.1", "1,2,3,4", "~/weights/sam.pth")
    if spec.kind == "str" and not isinstance(value, str | list):
        return raw  # text: "--set brain.model=4" means the text "4"
    return value


def coerce(value: Any, spec: FieldSpec) -> Any:
    """A TOML or override value in the field's type; refused in one line if it cannot be."""
    if value is None or (
        isinstance(value, str)
        and value.strip().lower() in ("none", "null")
        # no value, unless "none" is one of the field's choices (perception.reader)
        and value.strip().lower() not in _choices(spec)
    ):
        value = None
    elif spec.length is not None:
        if isinstance(value, str):
            value = [parse_override(x.strip(), spec) for x in value.split(",") if x.strip()]
        if isinstance(value, list):
            value = tuple(_widen(x, spec.kind) for x in value)
    else:
        value = _widen(value, spec.kind)
    why = refusal(spec, value)
    if why:
        raise ConfigError(why)
    return value


def _widen(v: Any, kind: str) -> Any:
    """What TOML gives, in the field's type where nothing is lost (1 → 1.0, 3.0 → 3)."""
    if isinstance(v, bool):
        return v
    if kind == "bool" and isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    if kind == "float" and isinstance(v, int):
        return float(v)
    if kind == "int" and isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def toml_value(v: Any) -> str:
    """A value as TOML that :func:`coerce` reads back to the same value. TOML has no
    null: none is written as the text ``"none"``, which every field reads as no value."""
    if v is None:
        return '"none"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return _toml_string(v)
    if isinstance(v, tuple | list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)  # finite after validation; repr reads back to the same float
    return str(int(v))


def _toml_string(s: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
