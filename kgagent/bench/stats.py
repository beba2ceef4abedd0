"""The statistics of a grid: mean ± SE, the paired t test, and the IQM with bootstrap CIs.

Why these: runs of one method move by a standard deviation of 2–20 between seeds
on the built-in games, so a difference of means says little without the paired
difference (same seed, two methods) and its standard error. The interquartile
mean (IQM: the mean of the middle 50 % of the runs) with a percentile bootstrap
confidence interval is the aggregate Agarwal et al. recommend for few runs
("Deep RL at the edge of the statistical precipice", NeurIPS 2021): less
swayed by one outlying seed than the mean, less wasteful than the median.

The IQM trims ``floor(n / 4)`` runs from each end, as ``scipy.stats.trim_mean(x,
0.25)`` and the authors' ``rliable`` do; with fewer than four runs it is the mean.
The p-value of the t statistic comes from Student's t distribution through the
regularised incomplete beta function (no SciPy needed). Pairs with no spread (every
difference the same) have no t and no p: a t of ∞ would read as certainty drawn from
a handful of identical runs.

:func:`verdict` is the one rule by which a paired difference meets a target: the
project's rule for learning claims (at least :data:`MIN_PAIRS` pairs, the paired t
with p < :data:`ALPHA`), so that a difference inside the noise reads "not shown".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np

#: The fewest pairs a verdict other than "not shown" takes (the project's rule: ≥ 10 seeds).
MIN_PAIRS = 10
#: The two-sided p-value of the paired t test below which a difference is shown.
ALPHA = 0.05


@dataclass
class Summary:
    """One group of runs on one figure."""

    n: int
    mean: float
    sd: float | None  # None below 2 runs
    se: float | None
    iqm: float
    iqm_lo: float
    iqm_hi: float
    median: float
    min: float
    max: float

    def as_row(self) -> dict[str, float | int | None]:
        return asdict(self)


@dataclass
class Paired:
    """``x − y`` over pairs: the paired t test, and how many pairs went up, stayed, went down."""

    n: int
    mean: float
    se: float | None
    t: float | None  # None: fewer than 2 pairs, or no spread (every difference the same)
    df: int
    p: float | None  # two-sided; None where t is
    up: int
    even: int
    down: int

    def as_row(self) -> dict[str, float | int | None]:
        return asdict(self)

    @classmethod
    def from_row(cls, row: dict) -> Paired:
        """The test back from a row of the report's paired rows (its fields; others ignored)."""
        return cls(**{f.name: row[f.name] for f in fields(cls)})

    def text(self, digits: int = 2) -> str:
        """``+1.67 ± 0.83 SE (t = 2.01, p = 0.07; 7 up, 2 even, 3 down)``."""
        counts = f"{self.up} up, {self.even} even, {self.down} down"
        if self.se is None:
            return f"{self.mean:+.{digits}f} ({counts})"
        diff = f"{self.mean:+.{digits}f} ± {self.se:.{digits}f} SE"
        if self.t is None or self.p is None:
            return f"{diff} (no spread: t undefined; {counts})"
        return f"{diff} (t = {self.t:.2f}, p = {self.p:.3g}; {counts})"


@dataclass(frozen=True)
class Verdict:
    """Whether a paired difference meets a target: ``met``, ``not shown`` or ``missed``, and why."""

    word: str
    why: str

    def __str__(self) -> str:
        return f"{self.word} ({self.why})"


def mean_sd_se(values: Sequence[float]) -> tuple[float, float | None, float | None]:
    """Mean, sample standard deviation and standard error of the mean (None below 2 values)."""
    if not values:
        raise ValueError("no values")
    m = statistics.fmean(values)
    if len(values) < 2:
        return m, None, None
    sd = statistics.stdev(values)
    return m, sd, sd / math.sqrt(len(values))


def iqm(values: Sequence[float]) -> float:
    """The interquartile mean: the mean after trimming ``floor(n/4)`` values from each end."""
    if not values:
        raise ValueError("no values")
    x = sorted(values)
    k = len(x) // 4
    return statistics.fmean(x[k : len(x) - k])


def bootstrap_ci(
    values: Sequence[float],
    *,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the IQM: resample the runs with replacement ``reps``
    times (a fixed ``seed``, so a report is reproducible) and take the middle ``confidence``."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        raise ValueError("no values")
    rng = np.random.default_rng(seed)
    samples = np.sort(x[rng.integers(0, n, size=(reps, n))], axis=1)
    k = n // 4
    stats = samples[:, k : n - k].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(stats, [tail, 1.0 - tail])
    return float(lo), float(hi)


def summarise(
    values: Sequence[float], *, reps: int = 2000, confidence: float = 0.95, seed: int = 0
) -> Summary:
    """Every statistic of one group of runs."""
    m, sd, se = mean_sd_se(values)
    lo, hi = bootstrap_ci(values, reps=reps, confidence=confidence, seed=seed)
    return Summary(
        n=len(values),
        mean=m,
        sd=sd,
        se=se,
        iqm=iqm(values),
        iqm_lo=lo,
        iqm_hi=hi,
        median=statistics.median(values),
        min=min(values),
        max=max(values),
    )


def ratio(a: float, b: float) -> str:
    """``a / b`` as the benchmark reports print it: ``1.38×``; ``∞`` when only ``b`` is
    0; ``—`` when both are (figures here are counts, never negative)."""
    return f"{a / b:.2f}×" if b > 0 else ("∞" if a > 0 else "—")


#: Relative size under which the standard error of differences is rounding, not spread.
NO_SPREAD = 1e-12


def paired_t(x: Sequence[float], y: Sequence[float]) -> Paired:
    """The paired t test of ``x − y`` (pairs in order), with a two-sided p-value."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} values against {len(y)}: pairs need as many of each")
    d = [a - b for a, b in zip(x, y)]
    if not d:
        raise ValueError("no pairs")
    up, down = sum(v > 0 for v in d), sum(v < 0 for v in d)
    m = statistics.fmean(d)
    n = len(d)
    if n < 2:
        return Paired(n, m, None, None, 0, None, up, n - up - down, down)
    se = statistics.stdev(d) / math.sqrt(n)
    df = n - 1
    # Differences that are all equal but for rounding (0.3 − 0.2 and 0.4 − 0.3, as ERR's
    # fractions give) have no spread either: an se of 1e-17 would make t 1e16, p 0.
    if se <= NO_SPREAD * max(abs(v) for v in d):
        se = 0.0
    t = m / se if se > 0 else None
    p = t_two_sided(t, df) if t is not None else None
    return Paired(n, m, se, t, df, p, up, n - up - down, down)


def verdict(
    p: Paired, *, lower: bool = False, min_pairs: int = MIN_PAIRS, alpha: float = ALPHA
) -> Verdict:
    """Whether ``x − y`` shows the target "x above y" (``lower``: "x below y").

    Met: at least ``min_pairs`` pairs and a two-sided p below ``alpha`` in the target's
    direction; missed: the same in the other direction; otherwise not shown: too few
    pairs, no spread to test (the t is undefined), or a difference inside the noise.
    """
    if p.n < min_pairs:
        return Verdict("not shown", f"n = {p.n} < {min_pairs}")
    if not p.se or p.t is None or p.p is None or not math.isfinite(p.t):
        return Verdict("not shown", "no spread: t undefined")
    if p.p >= alpha:
        return Verdict("not shown", f"p = {p.p:.3g}")
    word = "met" if (p.mean < 0) == lower else "missed"
    return Verdict(word, f"p = {p.p:.3g}")


def t_two_sided(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("df must be >= 1")
    if not math.isfinite(t):
        return 0.0
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (continued fraction, Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    ln_front += a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(ln_front) * _beta_cf(a, b, x) / a
    return 1.0 - math.exp(ln_front) * _beta_cf(b, a, 1.0 - x) / b


def _beta_cf(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h
