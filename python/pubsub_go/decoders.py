"""Deprecated import path of the wasmtime decoder host: use
``pubsub_go.wasm_authoring`` (the same names)."""

from __future__ import annotations

import warnings

from .wasm_authoring import *  # noqa: F403
from .wasm_authoring import __all__  # noqa: F401

warnings.warn("pubsub_go.decoders is deprecated: import pubsub_go.wasm_authoring instead",
              DeprecationWarning, stacklevel=2)
