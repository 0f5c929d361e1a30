"""Offsets as checkpoints hold them: a query restarted from a checkpoint
written by an earlier version reads its offsets back unchanged."""

from __future__ import annotations

import json

import pytest

from pubsub_go.spark.read.driver.offsets import BatchOffset

# Offsets as the source wrote them before BatchOffset (dicts built key by key).
WRITTEN = [
    {"gen": "0123456789abcdef", "batch": 0},
    {"gen": "0123456789abcdef", "batch": 7, "run": "a1b2c3d4e5f6"},
    {"gen": "0123456789abcdef", "batch": 7, "run": "a1b2c3d4e5f6", "maxRows": 500},
    {"gen": "0123456789abcdef", "batch": 8, "run": "a1b2c3d4e5f6", "maxBytes": 1 << 20},
    {"gen": "0123456789abcdef", "batch": 9, "run": "a1b2c3d4e5f6", "cutoffUs": 1_735_689_600_000_000},
]


@pytest.mark.parametrize("old", WRITTEN)
def test_checkpointed_offset_round_trips_to_the_same_json(old):
    # Spark compares offsets by their JSON text, so key order matters too.
    text = json.dumps(old)
    back = BatchOffset.from_json(json.loads(text))
    assert json.dumps(back.to_json()) == text


def test_fields_are_typed():
    o = BatchOffset.from_json({"gen": "g", "batch": 3, "run": "r", "maxRows": 10, "cutoffUs": 5})
    assert (o.gen, o.batch, o.run, o.max_rows, o.max_bytes, o.cutoff_us) == ("g", 3, "r", 10, None, 5)


def test_initial_offset_is_batch_zero_of_a_new_generation():
    a, b = BatchOffset.initial(), BatchOffset.initial()
    assert a.batch == b.batch == 0 and a.gen != b.gen and a.to_json() == {"gen": a.gen, "batch": 0}


def test_an_offset_of_the_jvm_front_end_is_refused_naming_it():
    # What jvm/.../source/PubsubGoOffset.java writes into the checkpoint.
    jvm = {"frontEnd": "jvm", "batch": 3, "partitions": 2, "rowsPerPartition": 200000}
    with pytest.raises(ValueError, match="written by pubsub-go's jvm front end.*configure_spark"):
        BatchOffset.from_json(jvm)
