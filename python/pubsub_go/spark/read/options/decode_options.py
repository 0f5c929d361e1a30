"""Schema-mode options (format or decoder set): which decoder runs in the
Go data plane and what happens to a payload that fails to decode
(docs/source.md, "Schema mode")."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from .... import contract
from ....client import topic_path
from ...option_table import SOURCE, table, text
from ...optparse import OptionError
from .protobuf_options import parse_protobuf

_OPTIONS = table(SOURCE)
FORMATS = tuple(contract.builtin_formats())  # the built-in decoders (go/internal/decode)
ON_DECODE_ERROR = _OPTIONS["onDecodeError"].values or ()
# Options that only mean something in schema mode (format or decoder set).
SCHEMA_MODE_ONLY = _OPTIONS.requiring("schema mode", "format=protobuf")


@dataclass(frozen=True)
class DecodeOptions:
    """Schema mode: payloads are decoded in the Go data plane (docs/source.md)."""

    format: str  # a built-in format (FORMATS), or "custom" for a user module
    decoder_path: str | None  # the user module; None: a built-in format, run natively in Go
    avro_schema: str | None
    decoder_options: dict[str, str] = field(default_factory=dict)
    on_error: str = "fail"  # one of ON_DECODE_ERROR
    dead_letter_topic: str | None = None  # projects/P/topics/T
    error_column: str | None = None  # column mode only
    timeout_ms: int = field(default_factory=lambda: _OPTIONS.default("decoderTimeoutMs"))
    memory_limit_mb: int = field(default_factory=lambda: _OPTIONS.default("decoderMemoryLimitMB"))
    engine: str = field(default_factory=lambda: _OPTIONS.default("decoderEngine"))  # contract: decoder_engines
    protobuf: dict[str, str] = field(default_factory=dict)  # format=protobuf: the decoder's options
    # schemaFrom=topic: decode by the topic's Pub/Sub schema (topic_schema.py),
    # reading into schema_revision (None: the newest).
    schema_from_topic: bool = False
    schema_revision: str | None = None

    def module_options(self) -> dict[str, str]:
        out = dict(self.decoder_options)
        if self.avro_schema is not None:
            out["avro_schema"] = self.avro_schema
        out.update(self.protobuf)
        return out


def parse_decode(opts: Mapping[str, str], project: str) -> DecodeOptions | None:
    fmt = (text(opts, "format") or "").lower() or None
    module = text(opts, "decoder", strip=False)
    from_topic = _schema_from(opts, fmt, module)
    if from_topic:
        fmt = "avro"
    if fmt is None and module is None:
        stray = [n for n in SCHEMA_MODE_ONLY if n.lower() in opts]
        if stray:
            raise OptionError(f"option {stray[0]} only applies to schema mode: set option format "
                              f"({' or '.join(FORMATS)}) or decoder (a .wasm module), and a .schema(...)")
        return None
    if fmt is not None and module is not None:
        raise OptionError("options format and decoder are exclusive: format picks a built-in decoder, "
                          "decoder gives your own module")
    if fmt is not None and fmt not in FORMATS:
        raise OptionError(f"option format={text(opts, 'format')!r} is not supported; expected "
                          f"{' or '.join(FORMATS)} (or option decoder=<path to a .wasm module> for other formats)")
    if module is not None:
        module = os.path.abspath(module)
        if not os.path.isfile(module):
            raise OptionError(f"option decoder={module!r}: no such file; expected the path of a "
                              "decoder module (.wasm), present at the same path on every executor")
    avro = text(opts, "avroSchema", strip=False)
    if from_topic:
        if avro:
            raise OptionError("option avroSchema does not go with schemaFrom=topic: the schema is the topic's "
                              "(pin a revision with option schemaRevision)")
    elif text(opts, "schemaRevision"):
        raise OptionError("option schemaRevision only applies to schemaFrom=topic")
    elif fmt == "avro":
        if not avro:
            raise OptionError("option avroSchema is required with format=avro: the writer's Avro schema as "
                              'JSON text, e.g. {"type": "record", "name": "E", "fields": [...]}')
        try:
            parsed = json.loads(avro)
        except ValueError as e:
            raise OptionError(f"option avroSchema is not valid JSON: {e}") from None
        if not isinstance(parsed, dict) or parsed.get("type") != "record":
            raise OptionError('option avroSchema must be an Avro record schema ({"type": "record", ...})')
    elif avro:
        raise OptionError("option avroSchema only applies to format=avro")
    protobuf = parse_protobuf(opts, fmt)
    dec_opts: dict[str, str] = {}
    raw = text(opts, "decoderOptions", strip=False)
    if raw:
        try:
            parsed = json.loads(raw)
        except ValueError as e:
            raise OptionError(f"option decoderOptions is not valid JSON: {e}") from None
        if not isinstance(parsed, dict) or not all(isinstance(v, (str, int, float, bool)) for v in parsed.values()):
            raise OptionError('option decoderOptions must be a JSON object of strings, e.g. {"timezone": "+02:00"}')
        dec_opts = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in parsed.items()}
        if "avro_schema" in dec_opts:
            raise OptionError("give the Avro schema as option avroSchema, not in decoderOptions")
    engine = _engine(opts, module)
    dlq = text(opts, "deadLetterTopicId")
    on_error = (text(opts, "onDecodeError") or "").lower() or ("deadletter" if dlq else "fail")
    if on_error not in ON_DECODE_ERROR:
        raise OptionError(f"option onDecodeError={text(opts, 'onDecodeError')!r} is not one of "
                          f"{', '.join(ON_DECODE_ERROR)}")
    if on_error == "deadletter" and not dlq:
        raise OptionError("onDecodeError=deadletter needs option deadLetterTopicId: the topic that receives "
                          "payloads that fail to decode")
    if dlq and on_error != "deadletter":
        raise OptionError(f"option deadLetterTopicId is only used with onDecodeError=deadletter, "
                          f"not {on_error}")
    if dlq:
        try:
            dlq = topic_path(project, dlq)
        except ValueError as e:
            raise OptionError(f"option deadLetterTopicId: {e}") from None
    err_col = text(opts, "errorColumn", strip=False)
    if err_col and on_error != "column":
        raise OptionError(f"option errorColumn only applies to onDecodeError=column, not {on_error}")
    if on_error == "column":
        err_col = err_col or _OPTIONS.default("errorColumn")
    return DecodeOptions(
        format=fmt or "custom",
        decoder_path=module,
        avro_schema=avro if fmt == "avro" else None,
        decoder_options=dec_opts,
        on_error=on_error,
        dead_letter_topic=dlq,
        error_column=err_col,
        timeout_ms=_OPTIONS.value(opts, "decoderTimeoutMs"),
        memory_limit_mb=_OPTIONS.value(opts, "decoderMemoryLimitMB"),
        engine=engine,
        protobuf=protobuf,
        schema_from_topic=from_topic,
        schema_revision=text(opts, "schemaRevision"),
    )


def _schema_from(opts: Mapping[str, str], fmt: str | None, module: str | None) -> bool:
    """Option schemaFrom: "topic" decodes by the Pub/Sub schema of the
    subscription's topic, in the encoding and revision each message names."""
    raw = (text(opts, "schemaFrom") or "")
    if not raw:
        return False
    if raw.lower() != "topic":
        raise OptionError(f"option schemaFrom={raw!r} is not supported; expected topic (decode by the Pub/Sub "
                          "schema of the subscription's topic)")
    if module is not None:
        raise OptionError("options schemaFrom and decoder are exclusive: schemaFrom=topic decodes with the "
                          "built-in decoder of the topic's schema type")
    if fmt not in (None, "avro"):
        raise OptionError(f"option format={fmt!r} does not go with schemaFrom=topic, which decodes Avro schemas "
                          "(leave format out)")
    return True


def _engine(opts: Mapping[str, str], module: str | None) -> str:
    """Option decoderEngine: checked on the driver, so that a missing
    wasmtime package fails the query at its start."""
    auto, engines = _OPTIONS.default("decoderEngine"), _OPTIONS["decoderEngine"].values or ()  # the contract's
    engine = (text(opts, "decoderEngine") or "").lower() or auto
    if engine not in engines:
        raise OptionError(f"option decoderEngine={text(opts, 'decoderEngine')!r} is not one of {', '.join(engines)}")
    if engine != auto and module is None:
        raise OptionError("option decoderEngine applies to a decoder module (option decoder); the built-in "
                          "formats run natively")
    if engine == "wasmtime":
        from .... import wasmtime_library

        if wasmtime_library.find() is None:
            raise OptionError("option decoderEngine=wasmtime needs the wasmtime package on the driver and every "
                              "executor: pip install 'pubsub-go[wasm]' (or leave decoderEngine at auto, which "
                              "runs the module in wazero where wasmtime is missing)")
    return engine
