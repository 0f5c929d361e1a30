"""The decoder author's tool: WebAssembly payload decoders run in-process
with wasmtime, without Spark or the native library.

This is a second host of the pubsub-go decoder ABI (docs/decoder-abi.md),
beside the Go data plane's (go/internal/decode): it runs the same
``.wasm`` modules, so a decoder can be developed and tested locally::

    from pubsub_go.wasm_authoring import Decoder
    dec = Decoder("json", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    batch, errors = dec.decode([b'{"id": 1, "name": "a"}', b"oops"])

Each module instance is sandboxed: no filesystem, network, environment or
arguments, a memory cap, and a wall-clock limit per batch (their defaults,
and the built-in formats, are the Go library's: _contract.json). A trap,
an out-of-memory or a timeout fails that batch with a
:class:`DecoderError` and the instance is replaced on the next call.

Decoding in production (schema mode, ``pubsub_go.decode``) runs in the Go
library: see pubsub_go/decode_api.py.
"""

from __future__ import annotations

from .abi import ABI_VERSION
from .decoder import BUILTINS, Decoder, builtin_path
from .errors import DecoderCrash, DecoderError, DecoderMemoryError, DecoderTimeout

__all__ = [
    "ABI_VERSION",
    "BUILTINS",
    "Decoder",
    "DecoderCrash",
    "DecoderError",
    "DecoderMemoryError",
    "DecoderTimeout",
    "builtin_path",
]
