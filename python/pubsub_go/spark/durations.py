"""Time options, read as Spark writes durations: `"10s"`, `"500ms"`,
`"2 minutes"`, `"1.5h"`, or a plain integer in the option's own unit (the
unit its name says: maxWaitTimeMs in milliseconds, ackDeadlineSeconds in
seconds), as before. One parser for every option that takes a time, source
and sink alike; docs/source.md ("Durations") lists the forms and
tests/test_docs.py checks that table against UNITS."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

from .optparse import OptionError

# Unit spellings -> milliseconds. The short forms are Spark's time strings
# (spark.network.timeout=120s, Kafka's maxTriggerDelay=15m); the long ones
# are its interval strings (trigger(processingTime="2 minutes")).
UNITS: dict[str, Fraction] = {}
for _names, _ms in (
    (("us", "usec", "microsecond", "microseconds"), Fraction(1, 1000)),
    (("ms", "msec", "millisecond", "milliseconds"), Fraction(1)),
    (("s", "sec", "secs", "second", "seconds"), Fraction(1000)),
    (("m", "min", "mins", "minute", "minutes"), Fraction(60_000)),
    (("h", "hr", "hrs", "hour", "hours"), Fraction(3_600_000)),
    (("d", "day", "days"), Fraction(86_400_000)),
):
    for _n in _names:
        UNITS[_n] = _ms

MS, SECONDS = "ms", "s"
_UNIT_MS = {MS: Fraction(1), SECONDS: Fraction(1000)}
_FORM = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.I)

ACCEPTED = ("an integer in {unit_name}, or a number with a unit: 500ms, 10s, 2 minutes, 1.5h "
            "(units us, ms, s, m/min, h, d, also spelled out)")


def _unit_name(unit: str) -> str:
    return "milliseconds" if unit == MS else "seconds"


def parse_duration(raw: str, unit: str) -> int | None:
    """The duration in `unit` (MS or SECONDS), or None when raw is not a
    duration or not a whole number of that unit."""
    m = _FORM.match(str(raw))
    if not m:
        return None
    number, suffix = Fraction(m.group(1)), m.group(2).lower()
    if not suffix:
        return int(number) if number.denominator == 1 else None
    if suffix not in UNITS:
        return None
    value = number * UNITS[suffix] / _UNIT_MS[unit]
    return int(value) if value.denominator == 1 else None


def duration_option(opts: Mapping[str, str], name: str, default: int, lo: int, hi: int | None = None,
                    unit: str = MS, why: str = "") -> int:
    """The option `name` in `unit`, within lo..hi (in that unit); the error
    names the option, the value and the accepted forms."""
    raw = opts.get(name.lower())
    if raw is None or str(raw).strip() == "":
        return default
    v = parse_duration(str(raw), unit)
    if v is None:
        raise OptionError(f"option {name}={raw!r} is not a duration in whole {_unit_name(unit)}; expected "
                          + ACCEPTED.format(unit_name=_unit_name(unit)))
    if v < lo or (hi is not None and v > hi):
        rng = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise OptionError(f"option {name}={str(raw).strip()} is out of range; expected {rng} "
                          f"{_unit_name(unit)}{why}")
    return v
