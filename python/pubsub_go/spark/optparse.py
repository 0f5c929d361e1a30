"""Option parsing shared by the source and the sink: Spark hands options
over as lower-cased strings; these helpers turn them into values or raise
an OptionError that names the option (as documented) and what would be right."""

from __future__ import annotations

import os
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


def connection_options(opts: Mapping[str, str]) -> tuple[str | None, str | None]:
    """emulatorHost (else PUBSUB_EMULATOR_HOST) and credentials, checked."""
    emulator = (opts.get("emulatorhost") or os.environ.get("PUBSUB_EMULATOR_HOST") or "").strip() or None
    if emulator and (":" not in emulator or not emulator.rsplit(":", 1)[1].isdigit()):
        raise OptionError(f"option emulatorHost={emulator!r} (or PUBSUB_EMULATOR_HOST) must be "
                          "host:port, e.g. 127.0.0.1:8085")
    creds = (opts.get("credentials") or "").strip() or None
    if creds and not os.path.isfile(creds):
        raise OptionError(f"option credentials={creds!r}: no such file; expected the path of a "
                          "service-account key JSON (or leave it unset for Application Default Credentials)")
    return emulator, creds
