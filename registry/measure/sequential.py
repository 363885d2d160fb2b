"""Sequential planning of engine starts: look after every pair of starts, stop as soon as
the verdict is decided, and stay honest about looking more than once.

A verdict that is re-judged after every pair and stops at the first decided look would,
at a fixed 95% per look, decide wrongly more often than 5%: each look is another chance
for chance to cross a bound. The rule here spends the error over the looks a run may
make (Bonferroni over looks, the simplest alpha spending): with at most K looks each
interval is at the level 1 - (1 - LEVEL) / K, so the chance that any look decides wrongly
is at most 1 - LEVEL whatever the looks' correlation (docs/measurement.md, "Sequential
starts"). One look (K = 1) is the fixed design, unchanged.

`simulate` checks it by resampling kept start-to-start residuals (tests/test_sequential.py):
seeded, pure, no engine.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence

from pydantic import Field

from registry.base.model import Frozen
from registry.errors import InvalidInput
from registry.measure.starts import LEVEL, PairedInterval, paired_interval, pooled, t_quantile

MOST_STARTS = 200  # beyond this a decision is called out of reach


class Looks(Frozen):
    """When a run of starts looks at its verdict, and at what level."""

    first: int = Field(description="starts a side before the first look")
    most: int = Field(description="starts a side at most")
    budget_s: float | None = Field(None, description="stop starting new pairs past this")
    level: float = Field(LEVEL, description="the overall confidence")

    @property
    def count(self) -> int:
        return self.most - self.first + 1

    @property
    def each(self) -> float:
        """The level of each look's interval: the error split evenly over the looks."""
        return 1 - (1 - self.level) / self.count


def looks(first: int, most: int | None, budget_minutes: float | None,
          level: float = LEVEL) -> Looks:
    """`--starts` (first look), `--max-starts` (default: --starts, the fixed design) and
    `--budget-minutes`, checked."""
    top = first if most is None else most
    if top < first:
        raise InvalidInput(f"--max-starts {top}: fewer than --starts {first}",
                           hint="--max-starts is the most starts a side; --starts the first look")
    if top > MOST_STARTS:
        raise InvalidInput(f"--max-starts {top}: at most {MOST_STARTS}")
    if budget_minutes is not None and budget_minutes <= 0:
        raise InvalidInput(f"--budget-minutes {budget_minutes}: must be more than 0")
    return Looks(first=first, most=top, level=level,
                 budget_s=None if budget_minutes is None else 60 * budget_minutes)


def stop_reason(decided: bool, n: int, plan: Looks, elapsed_s: float) -> str | None:
    """Why a run of starts stops after `n` starts a side, or None to go on."""
    if n < plan.first:
        return None
    if decided:
        return f"decided after {n} starts a side"
    if n >= plan.most:
        return (f"the planned {n} starts a side ran" if plan.count == 1 else
                f"most starts spent ({n} a side, --max-starts)")
    if plan.budget_s is not None and elapsed_s >= plan.budget_s:
        return (f"budget spent ({elapsed_s / 60:.1f} of {plan.budget_s / 60:g} minutes) "
                f"after {n} starts a side")
    return None


def half_width(start_sd: float, n: int, *, df: int = 0, sealed_weight: float = 0.0,
               level: float = LEVEL, paired: bool = True) -> float | None:
    """The ln half-width of the interval over `n` starts a side when one start's ln figure
    spreads `start_sd` (None: no degrees of freedom yet):

        t(level, df + d(n)) * start_sd * sqrt(2 * (1/n + sealed_weight))

    d(n) = n - 1 over pairs, 2n - 2 over independent starts; `df`: degrees of freedom the
    spread already has from elsewhere (the sealed records' starts)."""
    d = df + (n - 1 if paired else 2 * n - 2)
    if d < 1 or n < 1:
        return None
    return t_quantile(1 - (1 - level) / 2, d) * start_sd * math.sqrt(2 * (1 / n + sealed_weight))


def starts_needed(start_sd: float, margin: float, *, level: float = LEVEL,
                  sealed_weight: float = 0.0, df: int = 0, paired: bool = True) -> int | None:
    """The fewest starts a side whose interval's `half_width` fits in `margin` (ln units);
    None beyond MOST_STARTS."""
    if start_sd <= 0:
        return 1
    return next((n for n in range(1, MOST_STARTS + 1)
                 if (h := half_width(start_sd, n, df=df, sealed_weight=sealed_weight,
                                     level=level, paired=paired)) is not None
                 and h <= margin), None)


def independent_interval(a: Sequence[float], b: Sequence[float], *, sealed: float = 0.0,
                         sealed_weight: float = 0.0,
                         start_spreads: Sequence[tuple[float, int]] = (),
                         level: float = LEVEL) -> PairedInterval | None:
    """The interval of exp(mean(b) - mean(a) - sealed) over independent starts' ln
    figures: Student t with the spread pooled within each side (and from `start_spreads`,
    each (variance of one start's ln figure, df)); `sealed_weight` as paired_interval's,
    in pair variances (2 x a start's)."""
    if not a or not b:
        return None
    groups = [(statistics.variance(x), len(x) - 1) for x in (a, b) if len(x) > 1]
    var, df = pooled([*groups, *start_spreads])
    mean = statistics.fmean(b) - statistics.fmean(a) - sealed
    n = min(len(a), len(b))
    if var is None:
        return PairedInterval(ratio=math.exp(mean), low=None, high=None, level=level,
                              pairs=n, df=0, method="no replication: no interval")
    half = t_quantile(1 - (1 - level) / 2, df) * math.sqrt(
        var * (1 / len(a) + 1 / len(b) + 2 * sealed_weight))
    return PairedInterval(ratio=math.exp(mean), low=math.exp(mean - half),
                          high=math.exp(mean + half), level=level, pairs=n, df=df,
                          spread=math.sqrt(2 * var),
                          method=f"Student t ({df} df) over independent starts")


# ---- the simulation that checks the rule ----

Decide = Callable[[PairedInterval | None], str | None]  # a decision, or None: undecided


class Simulated(Frozen):
    trials: int
    effect: float = Field(description="the true ln ratio B/A")
    decisions: dict[str, int] = Field(description="decision -> trials; undecided included")
    mean_starts: float = Field(description="starts a side, on average, when the run stopped")


def simulate(residuals: Sequence[float], effect: float, plan: Looks, decide: Decide, *,
             trials: int, seed: int, paired: bool = True,
             sealed_starts: int = 0) -> Simulated:
    """Runs of starts whose ln figures are `effect` (side B) plus residuals drawn with
    replacement, looked at as `plan` says; with `sealed_starts` > 0 each run judges
    against sealed figures of that many starts a side, drawn the same way without the
    effect (a controlled reproduction: B the record, A its control)."""
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    total = 0
    for _ in range(trials):
        # sealed at the true speed: the effect is what changed since (B now)
        sealed_a = [rng.choice(residuals) for _ in range(sealed_starts)]
        sealed_b = [rng.choice(residuals) for _ in range(sealed_starts)]
        a: list[float] = []
        b: list[float] = []
        outcome = "undecided"
        for n in range(1, plan.most + 1):
            a.append(rng.choice(residuals))
            b.append(rng.choice(residuals) + effect)
            if n < plan.first:
                continue
            iv = _interval(a, b, sealed_a, sealed_b, plan.each, paired)
            decision = decide(iv)
            if decision is not None:
                outcome = decision
                break
        total += n
        counts[outcome] = counts.get(outcome, 0) + 1
    return Simulated(trials=trials, effect=effect, decisions=dict(sorted(counts.items())),
                     mean_starts=total / trials)


def _interval(a: list[float], b: list[float], sealed_a: list[float], sealed_b: list[float],
              level: float, paired: bool) -> PairedInterval | None:
    spreads = [(statistics.variance(x), len(x) - 1) for x in (sealed_a, sealed_b)
               if len(x) > 1]
    sealed = statistics.fmean(sealed_b) - statistics.fmean(sealed_a) if sealed_a else 0.0
    weight = (1 / len(sealed_a) + 1 / len(sealed_b)) / 2 if sealed_a else 0.0
    if paired:
        return paired_interval([y - x for x, y in zip(a, b, strict=True)], sealed=sealed,
                               sealed_weight=weight, start_spreads=spreads, level=level)
    return independent_interval(a, b, sealed=sealed, sealed_weight=weight,
                                start_spreads=spreads, level=level)
