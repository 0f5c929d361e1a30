"""The source's options for format=protobuf (docs/source.md, "Schema
mode"): the message type and its definition, turned into the protobuf
decoder's options (wasm-decoders/protodec; ``protobuf_source`` is compiled
by go/internal/decode/protosource.go)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping

from ...option_table import SOURCE, table, text
from ...optparse import OptionError

# The message definition: exactly one of these.
DEFINITIONS = ("protobufDescriptorFile", "protobufDescriptorSet", "protobufSource")
OPTIONS = tuple(table(SOURCE).requiring("format=protobuf"))
ENCODINGS = table(SOURCE)["protobufEncoding"].values or ()


def parse_protobuf(opts: Mapping[str, str], fmt: str | None) -> dict[str, str]:
    """The decoder options for format=protobuf; {} for other formats (where
    these options are refused)."""
    given = [n for n in OPTIONS if opts.get(n.lower())]
    if fmt != "protobuf":
        if given:
            raise OptionError(f"option {given[0]} only applies to format=protobuf")
        return {}
    message = (text(opts, "protobufMessage") or "")
    if not message:
        raise OptionError("option protobufMessage is required with format=protobuf: the message type's full "
                          "name, e.g. mypackage.Event")
    defs = [n for n in DEFINITIONS if opts.get(n.lower())]
    if len(defs) != 1:
        raise OptionError(f"format=protobuf needs exactly one of {', '.join(DEFINITIONS)} (a descriptor set file "
                          f"as protoc --include_imports -o writes, the same inline as base64, or .proto source "
                          f"text){'; got ' + ' and '.join(defs) if defs else ''}")
    out = {"protobuf_message": message}
    value = opts[defs[0].lower()]
    if defs[0] == "protobufDescriptorFile":
        try:  # read on the driver: executors get the bytes, not the path
            with open(value, "rb") as f:
                out["protobuf_descriptor_set"] = base64.b64encode(f.read()).decode()
        except OSError as e:
            raise OptionError(f"option protobufDescriptorFile={value!r}: {e.strerror or e}") from None
    elif defs[0] == "protobufDescriptorSet":
        try:
            base64.b64decode(value, validate=True)
        except binascii.Error as e:
            raise OptionError(f"option protobufDescriptorSet is not base64 ({e}): give a serialized "
                              "FileDescriptorSet, base64-encoded") from None
        out["protobuf_descriptor_set"] = value
    else:
        out["protobuf_source"] = value
    encoding = (text(opts, "protobufEncoding") or "").lower()
    if encoding:
        if encoding not in ENCODINGS:
            raise OptionError(f"option protobufEncoding={text(opts, 'protobufEncoding')!r} is not one of "
                              f"{', '.join(ENCODINGS)} (json: protobuf's canonical JSON mapping)")
        out["protobuf_encoding"] = encoding
    depth = (text(opts, "protobufRecursiveDepth") or "")
    if depth:
        out["protobuf_recursive_depth"] = depth  # checked by the decoder, which the driver opens
    return out
