"""The executor task's process-wide set-up (spark/read/task.py)."""

from __future__ import annotations

import gc


def test_long_lived_objects_are_frozen_once_per_process():
    """The first task freezes what is alive (so full collections stop
    walking PySpark's and pyarrow's objects); later tasks do not freeze the
    garbage of earlier ones."""
    from pubsub_go.spark.read import task

    gc.unfreeze()
    task._frozen = False
    try:
        task._freeze_long_lived()
        frozen = gc.get_freeze_count()
        assert frozen > 1000, f"only {frozen} objects frozen"
        later = [object() for _ in range(5000)]
        task._freeze_long_lived()
        # Frozen objects may be freed meanwhile (the count drops); freezing
        # again would add the 5,000 new ones.
        assert gc.get_freeze_count() <= frozen, "a second task froze again"
        del later
    finally:
        gc.unfreeze()
        task._frozen = False
