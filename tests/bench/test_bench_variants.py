"""kgagent.bench.variants: ``NAME=METHOD:S.F=V[,...]`` read, checked against the config."""

from __future__ import annotations

import pytest

from kgagent.bench.variants import Variant, parse_variant, parse_variants
from kgagent.errors import ConfigError

METHODS = ("full", "no_graph", "random")


def test_a_variant_is_a_method_with_its_own_overrides() -> None:
    v = parse_variant("greedy=full:invocation.m_samples=1, memory.c0=0.5", METHODS)
    assert v == Variant("greedy", "full", ("invocation.m_samples=1", "memory.c0=0.5"))


def test_a_comma_inside_a_list_value_stays_with_its_value() -> None:
    v = parse_variant("keys=full:perception.grounding_scales=[0.9, 1.1],memory.c0=0.5", METHODS)
    assert v.overrides == ("perception.grounding_scales=[0.9, 1.1]", "memory.c0=0.5")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("greedy=full", "must look like NAME=METHOD:"),
        ("greedy:invocation.m_samples=1", "must look like NAME=METHOD:"),
        ("greedy=full:", "must look like NAME=METHOD:"),
        ("two words=full:memory.c0=0.5", "use letters, digits"),
        ("full=full:memory.c0=0.5", "is a method's name"),
        ("greedy=fulll:memory.c0=0.5", "unknown method 'fulll'; known: full, no_graph, random"),
        ("greedy=full:memory.c00=0.5", "variant 'greedy': unknown config field memory.c00"),
        ("greedy=full:memory.c0=lots", "variant 'greedy': "),
    ],
)
def test_a_bad_variant_is_one_line_naming_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_variant(text, METHODS)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_variant_names_are_distinct() -> None:
    ok = parse_variants(["a=full:memory.c0=0.5", "b=no_graph:memory.c0=0.5"], METHODS)
    assert [v.name for v in ok] == ["a", "b"]
    with pytest.raises(ConfigError, match="given twice: a"):
        parse_variants(["a=full:memory.c0=0.5", "a=no_graph:memory.c0=1"], METHODS)
