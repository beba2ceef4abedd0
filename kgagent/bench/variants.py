"""Named variants of a benchmark method: ``NAME=METHOD:SECTION.FIELD=VALUE[,...]``.

An ablation study asks "what does this one setting do?". Run as separate
invocations with ``--set``, each variant lands in its own report, and a ``--set``
applies to every method of a grid, baselines included. A variant is a method with
its own overrides, run in the same grid as the others, so the report pairs it by
seed with the baselines and with the method it varies:

    --variant novelty_off=full:rewards.use_novelty=false
    --variant greedy=full:invocation.m_samples=1,memory.c0=0.5

Overrides are separated by commas; a comma inside a value (a TOML list) stays with
its value, since a new override starts only where ``SECTION.FIELD=`` follows. Every
override is checked against the config when the variant is read, so a misspelt
field fails before the first run, not after an hour of them.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kgagent.config import Config
from kgagent.errors import ConfigError

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*\Z")
_NEXT_OVERRIDE = re.compile(r",\s*(?=[A-Za-z_]\w*\.\w+\s*=)")


@dataclass(frozen=True)
class Variant:
    """A label for the report, the method it runs, and the overrides it adds."""

    name: str
    method: str
    overrides: tuple[str, ...] = ()


def parse_variant(text: str, methods: Iterable[str]) -> Variant:
    """``NAME=METHOD:S.F=V[,S.F=V...]`` → :class:`Variant`; a :class:`ConfigError` naming
    what is wrong otherwise. ``methods`` are the methods the benchmark knows."""
    known = list(methods)
    name, eq, rest = text.partition("=")
    method, colon, sets = rest.partition(":")
    name, method = name.strip(), method.strip()
    if not eq or not colon or not sets.strip():
        raise ConfigError(
            f"variant {text!r} must look like NAME=METHOD:SECTION.FIELD=VALUE[,SECTION.FIELD=VALUE]"
        )
    if not _NAME.match(name):
        raise ConfigError(f"variant name {name!r}: use letters, digits and _ . + - only")
    if name in known:
        raise ConfigError(f"variant name {name!r} is a method's name; pick another")
    if method not in known:
        raise ConfigError(f"variant {name!r}: unknown method {method!r}; known: {', '.join(known)}")
    overrides = tuple(s.strip() for s in _NEXT_OVERRIDE.split(sets.strip()) if s.strip())
    try:
        Config.load(None, list(overrides))
    except ConfigError as e:
        raise ConfigError(f"variant {name!r}: {e}") from None
    return Variant(name, method, overrides)


def parse_variants(texts: Sequence[str], methods: Iterable[str]) -> list[Variant]:
    """Every ``--variant`` of a command line; names must be distinct."""
    known = list(methods)
    out = [parse_variant(t, known) for t in texts]
    names = [v.name for v in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"variant name(s) given twice: {', '.join(twice)}")
    return out


def add_arguments(ap: argparse.ArgumentParser, paired_with: str) -> None:
    """A benchmark's ``--set`` (every run) and ``--variant`` (repeatable) options;
    ``paired_with`` says what its report pairs a variant with besides its method."""
    ap.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="S.F=V",
        help="a setting (section.field=value) for every run",
    )
    ap.add_argument(
        "--variant",
        dest="variants",
        action="append",
        default=[],
        metavar="NAME=METHOD:S.F=V[,S.F=V]",
        help=f"also run METHOD with these settings, reported as NAME and paired by seed with "
        f"{paired_with} and with METHOD (repeatable)",
    )
