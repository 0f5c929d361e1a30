"""Once per Python worker process: the long-lived objects leave the cyclic
garbage collector's reach.

A task allocates container objects per Arrow batch (PySpark's framing,
pyarrow wrappers, our own bookkeeping), so CPython's collector runs often,
and every full collection walks again everything the worker imported
(PySpark's, pyarrow's and numpy's modules and the like). That was 7.7% of
the machine's CPU in a 1 KB source run and ~7% in a sink run
(bench/harness/analysis.md). `gc.freeze()` moves everything alive now into
the permanent generation, which collections skip. Frozen objects are never
freed, so garbage is collected first, and only the first task of a worker
freezes: a later one would freeze earlier tasks' garbage.
"""

from __future__ import annotations

import gc

_frozen = False


def freeze_long_lived() -> None:
    """Called at the start of every source and sink task; acts once per process."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()
