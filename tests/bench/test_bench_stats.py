"""The grid's statistics on numbers worked out by hand."""

from __future__ import annotations

import math

import pytest

from kgagent.bench import stats


def test_mean_sd_se_by_hand() -> None:
    m, sd, se = stats.mean_sd_se([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    assert m == 5.0
    assert sd == pytest.approx(math.sqrt(32 / 7))  # squared deviations sum to 32
    assert se == pytest.approx(math.sqrt(32 / 7) / math.sqrt(8))
    assert stats.mean_sd_se([3.0]) == (3.0, None, None)


def test_paired_t_by_hand() -> None:
    # differences 2, 3, 4: mean 3, sd 1, SE 1/sqrt(3), t = 3 sqrt(3), df 2
    p = stats.paired_t([3.0, 5.0, 7.0], [1.0, 2.0, 3.0])
    assert (p.n, p.df, p.up, p.even, p.down) == (3, 2, 3, 0, 0)
    assert p.mean == 3.0
    assert p.se == pytest.approx(1 / math.sqrt(3))
    assert p.t == pytest.approx(3 * math.sqrt(3))
    # Student's t with 2 df: P(|T| >= t) = 1 - t / sqrt(2 + t^2)
    assert p.p == pytest.approx(1 - p.t / math.sqrt(2 + p.t**2), rel=1e-9)
    assert "t = 5.20" in p.text() and "3 up, 0 even, 0 down" in p.text()


def test_paired_t_edge_cases() -> None:
    even = stats.paired_t([1.0, 2.0], [1.0, 2.0])
    assert even.t is None and even.p is None and even.even == 2
    steady = stats.paired_t([2.0, 3.0], [1.0, 2.0])  # always +1: no spread, so no t and no p
    assert steady.se == 0.0 and steady.t is None and steady.p is None
    assert steady.text() == "+1.00 ± 0.00 SE (no spread: t undefined; 2 up, 0 even, 0 down)"
    one = stats.paired_t([5.0], [3.0])
    assert one.mean == 2.0 and one.se is None and one.t is None
    with pytest.raises(ValueError):
        stats.paired_t([1.0], [1.0, 2.0])


@pytest.mark.parametrize(
    ("t", "df", "p"),
    [
        (1.0, 1, 0.5),  # Cauchy: P(|T| >= 1) = 1/2
        (2.0, 2, 1 - 2 / math.sqrt(6)),  # closed form for 2 df
        (0.0, 7, 1.0),
        (-2.0, 2, 1 - 2 / math.sqrt(6)),  # two-sided
    ],
)
def test_t_distribution_closed_forms(t: float, df: int, p: float) -> None:
    assert stats.t_two_sided(t, df) == pytest.approx(p, abs=1e-12)


def test_t_table_value() -> None:
    # the textbook two-sided 5 % critical value for 9 df is 2.262
    assert stats.t_two_sided(2.262, 9) == pytest.approx(0.05, abs=2e-4)


def test_iqm_trims_a_quarter_from_each_end() -> None:
    assert stats.iqm(list(range(1, 11))) == 5.5  # 10 runs: drop 2 and 2, mean of 3..8
    assert stats.iqm([0, 0, 1, 2, 3, 100, 4, 5]) == 2.5  # 8 runs: mean of 1, 2, 3, 4
    assert stats.iqm([1.0, 2.0, 9.0]) == 4.0  # fewer than 4: the mean
    assert stats.iqm([7.0]) == 7.0


def test_bootstrap_ci_fixed_seed() -> None:
    values = [0.0, 1.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0]
    a = stats.bootstrap_ci(values, reps=500, seed=3)
    assert a == stats.bootstrap_ci(values, reps=500, seed=3)  # reproducible
    assert a[0] <= stats.iqm(values) <= a[1]
    # the percentile interval of resampled IQMs, recomputed by hand from the same draws
    import numpy as np

    rng = np.random.default_rng(3)
    idx = rng.integers(0, 8, size=(500, 8))
    iqms = sorted(stats.iqm([values[i] for i in row]) for row in idx)
    lo, hi = np.quantile(iqms, [0.025, 0.975])
    assert a == pytest.approx((lo, hi))


def test_bootstrap_ci_degenerate_and_two_points() -> None:
    assert stats.bootstrap_ci([3.0, 3.0, 3.0]) == (3.0, 3.0)
    # two runs 0 and 1: a resample's mean is 0 (p 1/4), 0.5 (1/2) or 1 (1/4), so the
    # middle 80 % runs from 0 to 1
    assert stats.bootstrap_ci([0.0, 1.0], confidence=0.8) == (0.0, 1.0)


def test_summarise_collects_everything() -> None:
    s = stats.summarise([1.0, 2.0, 3.0, 4.0], reps=200)
    assert (s.n, s.mean, s.iqm, s.median, s.min, s.max) == (4, 2.5, 2.5, 2.5, 1.0, 4.0)
    assert s.iqm_lo <= s.iqm <= s.iqm_hi


def test_a_ratio_of_means_is_printed_with_its_zero_cases() -> None:
    from kgagent.bench.stats import ratio

    assert ratio(6.6, 5.2) == "1.27×"
    assert ratio(1.0, 0.0) == "∞"
    assert ratio(0.0, 0.0) == "—"
    assert ratio(0.0, 2.0) == "0.00×"


def _diffs(*d: float) -> stats.Paired:
    """The paired test of differences ``d`` (against zeros)."""
    return stats.paired_t(list(d), [0.0] * len(d))


@pytest.mark.parametrize(
    ("paired", "lower", "expected"),
    [
        (_diffs(1.0, 1.0), False, "not shown (n = 2 < 10)"),  # the researcher's g2.toml
        (_diffs(3.0, 1.0, 2.0), False, "not shown (n = 3 < 10)"),
        (_diffs(*[1.0] * 12), False, "not shown (no spread: t undefined)"),
        # the README's rounds: 12 series, t = 2.01 with 11 df
        (_diffs(0, -2, -2, 6, 1, 2, -1, 6, 2, 3, 5, 0), False, "not shown (p = 0.0695)"),
        (_diffs(*[1.0, 2.0] * 5), False, "met (p = 8.54e-06)"),  # t = 9, 9 df
        (_diffs(*[1.0, 2.0] * 5), True, "missed (p = 8.54e-06)"),
        (_diffs(*[-1.0, -2.0] * 5), True, "met (p = 8.54e-06)"),
        (_diffs(*[-1.0, -2.0] * 5), False, "missed (p = 8.54e-06)"),
    ],
)
def test_one_verdict_rule(paired: stats.Paired, lower: bool, expected: str) -> None:
    assert str(stats.verdict(paired, lower=lower)) == expected


def test_a_stored_infinite_t_is_no_spread_to_the_verdict() -> None:
    """Results written before no spread had no t kept t = inf and p = 0 (summary.json)."""
    row = {**_diffs(*[1.0] * 10).as_row(), "t": math.inf, "p": 0.0, "text": "…"}
    assert str(stats.verdict(stats.Paired.from_row(row))) == "not shown (no spread: t undefined)"


def test_the_machine_line_says_which_simd_features_the_cpu_lacks() -> None:
    from kgagent.bench.meta import simd_line

    line = simd_line("SSE SSE2 *SSE4.1 *AVX2 *AVX512-SKX?")
    assert line == "SSE SSE2 SSE4.1 AVX2 (not on this CPU: AVX512-SKX)"
    assert simd_line("SSE *AVX2") == "SSE AVX2"


def test_equal_differences_but_for_rounding_have_no_spread() -> None:
    """ERR's fractions: 0.3 − 0.2 and 0.4 − 0.3 differ in the 17th digit; that is not a
    spread to test (it gave t ≈ 1e16 and "met")."""
    from kgagent.bench.stats import paired_t, verdict

    p = paired_t([0.3, 0.4, 0.5] * 4, [0.2, 0.3, 0.4] * 4)
    assert p.t is None and p.p is None
    assert str(verdict(p)) == "not shown (no spread: t undefined)"
    assert paired_t([0.3, 0.41, 0.5] * 4, [0.2, 0.3, 0.4] * 4).t is not None  # a real spread


def test_a_methods_row_marks_the_run_it_lacks() -> None:
    """A seed that one method lost (a failed cell) shows as `-` in its place, not as a
    shorter row whose values slide under the wrong seeds."""
    from types import SimpleNamespace

    from kgagent.bench.report import _per_run

    exp = SimpleNamespace(seeds=[0, 1, 2], series=1)
    rows = [{"seed": 0, "series": 0, "p": 3.0}, {"seed": 2, "series": 0, "p": 5.0}]
    assert _per_run(exp, rows, "p") == "3 - 5"
    two = SimpleNamespace(seeds=[0], series=2)
    assert _per_run(two, [{"seed": 0, "series": 1, "p": 0.5}], "p") == "- 0.50"
