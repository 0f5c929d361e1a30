"""Option parsing shared by the source and the sink: Spark hands options
over as lower-cased strings; these helpers turn them into values or raise
an OptionError that names the option (as documented) and what would be right."""

from __future__ import annotations

from collections.abc import Mapping


class OptionError(ValueError):
    """A bad option: the message names it and says what would be right."""


def int_option(opts: Mapping[str, str], name: str, default: int, lo: int, hi: int | None = None,
               why: str = "") -> int:
    raw = opts.get(name.lower())
    if raw is None or str(raw).strip() == "":
        return default
    try:
        v = int(str(raw).strip())
    except ValueError:
        raise OptionError(f"option {name}={raw!r} is not an integer; expected an integer >= {lo}") from None
    if v < lo or (hi is not None and v > hi):
        rng = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise OptionError(f"option {name}={v} is out of range; expected {rng}{why}")
    return v



def text_option(opts: Mapping[str, str], name: str, strip: bool = True) -> str | None:
    """The string option `name` (stripped unless strip is False), or None
    when it is not given or blank."""
    raw = opts.get(name.lower())
    if raw is None or str(raw).strip() == "":
        return None
    return str(raw).strip() if strip else str(raw)


def bool_option(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None or str(raw).strip() == "":
        return default
    s = str(raw).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}={raw!r} is not a boolean; expected true or false")
