"""Twice per Python worker process: the long-lived objects leave the
cyclic garbage collector's reach.

A task allocates container objects per Arrow batch (PySpark's framing,
pyarrow wrappers, our own bookkeeping), so CPython's collector runs often,
and every full collection walks again everything the worker imported
(PySpark's, pyarrow's and numpy's modules and the like). That was 7.7% of
the machine's CPU in a 1 KB source run and ~7% in a sink run
(bench/tools/spark_cpu.py and bench/tools/sink_cpu.py profile them with --perf).
`gc.freeze()` moves everything alive now into the permanent generation,
which collections skip.

Why twice: the first task imports what PySpark and pyarrow load lazily on
its way (pandas' and numpy's modules: ~31,000 objects, measured), after the
first freeze. PySpark's daemon runs a full `gc.collect()` after every task
of a reused worker (pyspark/daemon.py), and that walk over those modules
took 30-48 ms per task (about 13 ms of it CPU). It runs while the driver
commits, so it cost CPU, not rows/s. The second task's freeze takes them
out.

Frozen objects are never freed by the collector (reference counting still
frees them), so garbage is collected first, and only the first
FREEZES tasks freeze: a later freeze would only take in what earlier tasks
left alive, and a reference cycle among it would never be freed.
"""

from __future__ import annotations

import gc

# The first task's start, then the second's (after the first task's lazy
# imports, see above).
FREEZES = 2

_freezes = 0


def freeze_long_lived() -> None:
    """Called at the start of every source and sink task; acts in the first
    FREEZES tasks of a process."""
    global _freezes
    if _freezes < FREEZES:
        _freezes += 1
        gc.collect()
        gc.freeze()
