"""The errors of the wasmtime decoder host: a batch (or a decoder's start)
failed, and which way."""

from __future__ import annotations

__all__ = ["DecoderCrash", "DecoderError", "DecoderMemoryError", "DecoderTimeout"]


class DecoderError(Exception):
    """A batch (or the decoder's initialisation) failed."""


class DecoderTimeout(DecoderError):
    """The batch ran longer than the time limit; the instance was discarded."""


class DecoderMemoryError(DecoderError):
    """The module hit its memory cap; the instance was discarded."""


class DecoderCrash(DecoderError):
    """The module trapped or exited; the instance was discarded."""
