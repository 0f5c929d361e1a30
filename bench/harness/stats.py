"""Medians with their spread, and the formatting the report uses."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Spread:
    median: float
    lo: float
    hi: float
    n: int

    @staticmethod
    def of(xs: list[float]) -> Spread | None:
        xs = [x for x in xs if x is not None]
        if not xs:
            return None
        return Spread(statistics.median(xs), min(xs), max(xs), len(xs))

    def fmt(self, unit: str = "", scale: float = 1.0, digits: int = 3) -> str:
        m, lo, hi = (human(v / scale, digits) for v in (self.median, self.lo, self.hi))
        if self.n == 1:
            return f"{m}{unit} (1 run)"
        return f"{m}{unit} [{lo}–{hi}]"


def human(v: float, digits: int = 3) -> str:
    """3 significant digits with k/M suffixes: 123456 -> 123k."""
    a = abs(v)
    for div, suf in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{_sig(v / div, digits)}{suf}"
    return _sig(v, digits)


def _sig(v: float, digits: int) -> str:
    if v == 0:
        return "0"
    s = f"{v:.{digits}g}"
    if "e" in s:  # :g falls back to exponents for large integers
        s = f"{v:.0f}"
    return s


def fmt(s: Spread | None, unit: str = "", scale: float = 1.0) -> str:
    return s.fmt(unit, scale) if s is not None else "n/a"


def ratio(a: Spread | None, b: Spread | None) -> float | None:
    if a is None or b is None or b.median == 0:
        return None
    return a.median / b.median


def fmt_ratio(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f}x"
