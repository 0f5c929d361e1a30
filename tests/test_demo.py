"""The main job (`python -m pubsub_go demo`, scripts/demo.sh) with a small
count: every message read back exactly once through the data plane, with
progress lines, and its exactly-once check able to fail."""

from __future__ import annotations


def test_demo_reads_every_message_once(capsys) -> None:
    """The data-plane path only: the Spark path is the source's own
    (drainBacklog: tests/compat/test_compat.py), and a Spark session of its own
    here would cost CI ~40 s."""
    from pubsub_go.demo import run

    assert run(messages=2_000, spark=False) == 0
    out = capsys.readouterr().out
    assert "[2/4] published 2,000 messages" in out
    assert "[3/4] read through the data plane: 2,000/2,000" in out
    assert "data plane (Subscriber -> Arrow): 2,000 rows" in out
    assert "exactly once 2,000/2,000, duplicates 0, missing 0" in out
    assert "OK: 2,000 messages" in out


def test_exactly_once_check_counts_duplicates_and_missing() -> None:
    from pubsub_go.demo import Tally, _numbers, _sample

    t = Tally(4)
    t.add(_numbers(_sample(0, 3).column("payload")))  # 0, 1, 2: 3 missing
    t.add(_numbers(_sample(1, 1).column("payload")))  # 1 again
    assert t.verdict() == (False, "exactly once 2/4, duplicates 1, missing 1")
    t.add(_numbers(_sample(3, 1).column("payload")))
    assert t.verdict() == (False, "exactly once 3/4, duplicates 1, missing 0")


def test_demo_refuses_a_count_below_one(capsys) -> None:
    from pubsub_go.__main__ import main

    assert main(["demo", "--messages", "0"]) == 2
    assert "--messages must be at least 1, got 0" in capsys.readouterr().err
