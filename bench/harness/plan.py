"""How long and how often each section runs: the full run (~15 min on 2
cores) and --quick (~3 min, a smoke check: single runs, short windows)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    name: str
    reps: int
    # 1. data plane
    sizes: tuple[int, ...]
    dp_warmup: float
    dp_duration: float
    # 2. Spark end to end
    spark_sizes: tuple[int, ...]
    spark_warmup: float
    spark_window: float
    # 3. write
    py_publish_messages: int
    fast_publish_messages: int
    # 4. hand-off
    handoff_calls: int
    handoff_sizes: tuple[int, ...]
    # 5. memory
    drift_seconds: float
    drift_rate: int  # messages per second, paced


FULL = Plan(
    name="full", reps=3,
    sizes=(100, 1024, 10240, 102400), dp_warmup=2.0, dp_duration=4.0,
    spark_sizes=(1024,), spark_warmup=6.0, spark_window=10.0,
    py_publish_messages=30_000, fast_publish_messages=300_000,
    handoff_calls=200, handoff_sizes=(100, 1024),
    drift_seconds=600.0, drift_rate=20_000,
)

QUICK = Plan(
    name="quick", reps=1,
    sizes=(1024, 102400), dp_warmup=1.0, dp_duration=2.0,
    spark_sizes=(1024,), spark_warmup=4.0, spark_window=5.0,
    py_publish_messages=10_000, fast_publish_messages=100_000,
    handoff_calls=50, handoff_sizes=(1024,),
    drift_seconds=60.0, drift_rate=20_000,
)
