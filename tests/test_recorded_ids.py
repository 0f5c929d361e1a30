"""RecordedIds gives the same mask as pc.is_in over the recorded ids."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from pubsub_go.spark.read.recorded_ids import RecordedIds


def test_mask_equals_is_in_over_the_recorded_ids():
    recorded = pa.array([f"m{i}" for i in range(0, 5000, 3)], pa.string())
    r = RecordedIds(recorded)
    assert len(r) == len(recorded)
    for batch in (pa.array([f"m{i}" for i in range(1000, 1100)]), pa.array(["x", "y"]), pa.array([], pa.string())):
        got = r.is_in(batch)
        assert got.type == pa.bool_()
        assert got.to_pylist() == pc.is_in(batch, value_set=recorded).to_pylist()
    hits = r.is_in(pa.array(["m3", "m4", "m6"])).to_pylist()
    assert hits == [True, False, True]
