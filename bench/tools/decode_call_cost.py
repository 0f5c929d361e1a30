"""What a pubsub_go.decode call costs besides decoding: CPU µs per call of
the C example decoder (wasmtime engine) at 1, 1,000 and 10,000 rows, with
the batch's schema kept from the decoder's first batch (what decode() does)
and with it exported and imported again every call (what it did before),
alternating in one process, --rounds times; median (min–max), and of
the ratio of the two within each round.

    python bench/tools/decode_call_cost.py [--rounds 5] [--calls 2000]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decode_bench import ROOT, vpc_line, zig_env  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000, help="calls per measurement at 1 row (fewer for more rows)")
    args = ap.parse_args()
    import pyarrow as pa

    from pubsub_go import decode_api

    module = Path(tempfile.mkdtemp(prefix="decode-call-")) / "vpcflow_c.wasm"
    subprocess.run(["bash", str(ROOT / "wasm-decoders" / "build-guest.sh"), str(module),
                    "examples/vpcflow-c/vpcflow.c"], env=zig_env(), check=True)
    dec = decode_api._decoder_for(None, None, str(module), {}, decode_api.DEFAULT_TIMEOUT_MS,
                                  decode_api.DEFAULT_MEMORY_LIMIT_MB, "wasmtime")

    def kept(p: pa.Array) -> pa.RecordBatch:
        return dec.decode(p)

    def exported(p: pa.Array) -> pa.RecordBatch:
        dec._batch_schema = None  # as before: the schema comes with every batch
        return dec.decode(p)

    print("| rows a call | schema kept, µs | schema every call, µs | every call ÷ kept, per round |")
    print("| ---: | ---: | ---: | ---: |")
    for rows in (1, 1000, 10_000):
        payloads = pa.array([vpc_line(i) for i in range(rows)], pa.binary())
        assert kept(payloads).equals(exported(payloads))
        calls = max(20, args.calls // max(1, rows // 100))
        res: dict[str, list[float]] = {"kept": [], "exported": []}
        for _ in range(args.rounds):
            for name, fn in (("kept", kept), ("exported", exported)):
                cpu0 = time.thread_time()
                for _ in range(calls):
                    fn(payloads)
                res[name].append((time.thread_time() - cpu0) / calls * 1e6)

        def spread(v: list[float], fmt: str = ".0f") -> str:
            return f"{statistics.median(v):{fmt}} ({min(v):{fmt}}–{max(v):{fmt}})"

        ratios = [e / k for e, k in zip(res["exported"], res["kept"], strict=True)]
        print(f"| {rows:,} | {spread(res['kept'])} | {spread(res['exported'])} | {spread(ratios, '.2f')} |",
              flush=True)


if __name__ == "__main__":
    main()
