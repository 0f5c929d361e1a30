"""Source options: parsed and validated on the driver before any data
moves, with errors that name the option and what would be right."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ..client import subscription_path

RAW_SCHEMA_DDL = (
    "message_id STRING, publish_time TIMESTAMP, attributes MAP<STRING, STRING>, "
    "payload BINARY, ordering_key STRING, delivery_attempt INT"
)

# Every option the source understands, as documented (Spark lower-cases keys).
DOCUMENTED = [
    "projectId", "subscriptionId", "emulatorHost", "credentials", "numPartitions", "parallelism",
    "batchSize", "maxWaitTimeMs", "maxRecordsPerTrigger", "maxBytesPerTrigger", "maxRecordsPerPartition",
    "maxBatchDurationMs", "ackOnCommit", "batchLogLocation", "streamsPerPartition", "maxOutstandingMessages",
    "ackDeadlineSeconds", "commitLeaseSeconds", "format", "decoder", "avroSchema", "deadLetterTopicId",
    "onDecodeError", "path",
]
CANONICAL = {name.lower(): name for name in DOCUMENTED}
KNOWN = set(CANONICAL)


def unknown_option_message(unknown: list[str], documented: list[str], fmt: str = "pubsub-go") -> str:
    import difflib

    parts = []
    for u in unknown:
        close = difflib.get_close_matches(u, [d.lower() for d in documented], n=1, cutoff=0.75)
        hint = f" (did you mean {CANONICAL.get(close[0], close[0])}?)" if close else ""
        parts.append(f"{u!r}{hint}")
    return (f"unknown option(s) {', '.join(parts)} for format {fmt}; "
            f"accepted options: {', '.join(documented)}")


class OptionError(ValueError):
    """A bad option: the message names it and says what would be right."""


def _int(opts: Mapping[str, str], name: str, default: int, lo: int, hi: int | None = None) -> int:
    raw = opts.get(name.lower())
    if raw is None or raw == "":
        return default
    try:
        v = int(str(raw).strip())
    except ValueError:
        raise OptionError(f"option {name}={raw!r} is not an integer; expected an integer >= {lo}") from None
    if v < lo or (hi is not None and v > hi):
        rng = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise OptionError(f"option {name}={v} is out of range; expected {rng}")
    return v


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None or raw == "":
        return default
    s = str(raw).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise OptionError(f"option {name}={raw!r} is not a boolean; expected true or false")


@dataclass(frozen=True)
class SourceOptions:
    subscription: str  # projects/P/subscriptions/S
    emulator_host: str | None
    credentials: str | None
    num_partitions: int
    batch_size: int
    max_wait_ms: int
    max_records_per_trigger: int  # 0: no limit
    max_bytes_per_trigger: int  # 0: no limit
    max_records_per_partition: int
    max_batch_duration_ms: int
    ack_on_commit: bool
    batch_log_location: str
    streams_per_partition: int
    max_outstanding_messages: int
    ack_deadline_seconds: int
    commit_lease_seconds: int

    @staticmethod
    def parse(options: Mapping[str, str]) -> SourceOptions:
        opts = {str(k).lower(): v for k, v in options.items()}
        unknown = sorted(set(opts) - KNOWN)
        if unknown:
            raise OptionError(unknown_option_message(unknown, DOCUMENTED))
        project = opts.get("projectid") or None
        sub = opts.get("subscriptionid")
        if not sub:
            raise OptionError("option subscriptionId is required: a subscription id (with projectId) "
                              "or a full path projects/PROJECT/subscriptions/ID")
        try:
            sub_path = subscription_path(project, sub)
        except ValueError as e:
            raise OptionError(f"option subscriptionId: {e}; set projectId or give the full path") from None
        if project and sub_path.split("/")[1] != project:
            raise OptionError(f"option projectId={project!r} disagrees with subscriptionId={sub!r}")
        emulator = opts.get("emulatorhost") or os.environ.get("PUBSUB_EMULATOR_HOST") or None
        if emulator and (":" not in emulator or not emulator.rsplit(":", 1)[1].isdigit()):
            raise OptionError(f"option emulatorHost={emulator!r} must be host:port, e.g. 127.0.0.1:8085")
        creds = opts.get("credentials") or None
        if creds and not os.path.isfile(creds):
            raise OptionError(f"option credentials={creds!r}: no such file; expected the path of a "
                              "service-account key JSON (or leave it unset for Application Default Credentials)")
        if "numpartitions" in opts and "parallelism" in opts and opts["numpartitions"] != opts["parallelism"]:
            raise OptionError("options numPartitions and parallelism are aliases; set one")
        parts_name = "numPartitions" if "numpartitions" in opts else "parallelism"
        # Spark's default parallelism is not visible to a Python data source;
        # the driver's core count equals it in local mode.
        num_parts = _int(opts, parts_name, os.cpu_count() or 1, 1, 10_000)
        log_default = os.path.join(os.path.expanduser("~"), ".pubsub-go", "batchlog",
                                   sub_path.replace("projects/", "").replace("/subscriptions/", "."))
        return SourceOptions(
            subscription=sub_path,
            emulator_host=emulator,
            credentials=creds,
            num_partitions=num_parts,
            batch_size=_int(opts, "batchSize", 1000, 1, 1_000_000),
            max_wait_ms=_int(opts, "maxWaitTimeMs", 100, 1, 600_000),
            max_records_per_trigger=_int(opts, "maxRecordsPerTrigger", 0, 1),
            max_bytes_per_trigger=_int(opts, "maxBytesPerTrigger", 0, 1),
            max_records_per_partition=_int(opts, "maxRecordsPerPartition", 500_000, 1),
            max_batch_duration_ms=_int(opts, "maxBatchDurationMs", 10_000, 1, 3_600_000),
            ack_on_commit=_bool(opts, "ackOnCommit", True),
            batch_log_location=str(opts.get("batchloglocation") or log_default),
            streams_per_partition=_int(opts, "streamsPerPartition", 1, 1, 32),
            max_outstanding_messages=_int(opts, "maxOutstandingMessages", 0, 0),
            ack_deadline_seconds=_int(opts, "ackDeadlineSeconds", 60, 10, 600),
            commit_lease_seconds=_int(opts, "commitLeaseSeconds", 600, 10, 600),
        )
