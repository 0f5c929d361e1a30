"""Decode throughput, MB/s of payload per core, in one run:

Built-in JSON and Avro decoders (the same 1000 payloads, the Go
benchmarks' batch, into the same five columns):
- natively in the Go data plane (what schema mode runs; `go test -bench
  DecodeXNative` in go/internal/decode: output in C memory);
- through `pubsub_go.decode` from Python (the C decoder API);
- their .wasm builds in the Go host (wazero, memory cap and time limit on:
  the loop counter, and wazero's WithCloseOnContextDone for comparison),
  and in the Python host (wasmtime);
- the decoding core compiled natively on its own (wasm-decoders);
- Spark's own from_json / from_avro on a payload column (a timed job over
  an in-memory DataFrame, local[1]).

The built-in protobuf decoder on 1000 payloads of about 1 KB (the message
of tests/protobuf_vectors.py: nested, repeated, map, enum, Timestamp,
wrapper, oneof fields; = benchProtoEvent in go/internal/decode): natively
(BenchmarkDecodeProtobufNative, by the decoding thread's CPU time),
through `pubsub_go.decode`, and Spark's from_protobuf on the same bytes
(spark-protobuf: PUBSUB_GO_SPARK_PROTOBUF, Maven coordinates or local jars
from bench/tools/build_spark_protobuf.sh where Maven Central's is not
served; "–" where it cannot be had). --protobuf-only runs just these,
--rounds times, and replaces their section of decode_results.md.

The example user decoder (VPC flow log lines, 1000 per batch) per guest
SDK: Go (ABI 1) and C (ABI 2, built with zig's clang), each in wazero
(sandbox on), in wasmtime and compiled natively (for C: the same zig cc
and flags as the .wasm build, wasm-decoders/build-c.sh --native).

The C example is also run side by side, each mode in turn per round (the
Go host's wazero and wasmtime engines, then the native build),
and reported by wall clock and by the decoding thread's CPU time (steady
on a machine shared with other work); --c-example-only runs just that and
prints its table.

Writes bench/results/decode_results.md.

    python bench/tools/decode_bench.py [--seconds 3] [--spark-rows 200000] [--no-spark] [--protobuf-only]
        [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROWS = 1000
SPARK_AVRO = os.environ.get("PUBSUB_GO_SPARK_AVRO", "org.apache.spark:spark-avro_2.13:4.1.1")
SPARK_PROTOBUF = os.environ.get("PUBSUB_GO_SPARK_PROTOBUF", "org.apache.spark:spark-protobuf_2.13:4.1.1")
DDL = "id BIGINT, name STRING, tags ARRAY<STRING>, score DOUBLE, at TIMESTAMP"
AVRO_SCHEMA = {"type": "record", "name": "E", "fields": [
    {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
    {"name": "tags", "type": {"type": "array", "items": "string"}}, {"name": "score", "type": "double"},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}


NOTES = "<!-- notes below: kept by bench/tools/decode_bench.py -->"


def json_payload(i: int) -> bytes:  # = benchJSON in go/internal/decode/bench_test.go
    return (f'{{"id": {i}, "name": "user-{i}", "tags": ["alpha", "beta", "gamma"], "score": {i}.25, '
            f'"at": "2024-05-06T07:08:{i % 60:02d}.123456Z", "extra": {{"ignored": [1, 2, 3]}}}}').encode()


def _zz(v: int) -> bytes:
    u = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _str(s: str) -> bytes:
    return _zz(len(s)) + s.encode()


def avro_payload(i: int) -> bytes:  # = benchAvro
    b = _zz(i) + _str(f"user-{i}") + _zz(3) + b"".join(_str(t) for t in ("alpha", "beta", "gamma")) + _zz(0)
    return b + struct.pack("<d", i + 0.25) + _zz(1714979289123456 + i)


def go_bench(pkg_dir: Path, pattern: str, pkgs: list[str], seconds: float,
             env: dict[str, str] | None = None) -> dict[str, float]:
    """MB/s per benchmark name, GOMAXPROCS=1."""
    cmd = ["go", "test", "-run", "^$", "-bench", pattern, "-benchtime", f"{seconds}s", "-cpu", "1", "-count", "1",
           *pkgs]
    out = subprocess.run(cmd, cwd=pkg_dir, capture_output=True, text=True, timeout=1800, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    res = {}
    for m in re.finditer(r"^(Benchmark\w+)\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) MB/s", out.stdout, re.M):
        res[m.group(1)] = float(m.group(3))
    return res


def zig_env() -> dict[str, str]:
    return dict(os.environ, ZIG=os.environ.get("ZIG", f"{sys.executable} -m ziglang"))


def vpc_line(i: int) -> bytes:  # = vpcLine in go/internal/decode/bench_test.go
    return (f"2 123456789010 eni-{i:08x} 172.31.{i % 256}.{i % 200} 10.0.{i % 100}.{i % 250} {20000 + i % 40000} 443 6 "
            f"{i % 1000} {i * 37 % 100000} {1418530010 + i} {1418530070 + i} ACCEPT OK").encode()


def timed(fn, size: int, seconds: float) -> float:
    fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n * size / (time.perf_counter() - start) / 1e6


def vpcflow_modules(tmp: Path) -> dict[str, Path]:
    go_wasm, c_wasm = tmp / "vpcflow.wasm", tmp / "vpcflow_c.wasm"
    for out, src in ((go_wasm, "examples/vpcflow"), (c_wasm, "examples/vpcflow-c/vpcflow.c")):
        if out.exists():  # built earlier in this run
            continue
        subprocess.run(["bash", str(ROOT / "wasm-decoders" / "build-guest.sh"), str(out), src],
                       env=zig_env(), check=True)
    return {"go": go_wasm, "c": c_wasm}


def vpcflow_c_native(tmp: Path, seconds: float) -> float:
    src = ROOT / "wasm-decoders"
    exe = tmp / "vpcflow_bench"
    # The same compiler and flags as the .wasm build (build-c.sh --native).
    subprocess.run(["bash", str(src / "build-c.sh"), "--native", str(exe),
                    str(src / "examples" / "vpcflow-c" / "vpcflow.c"),
                    str(src / "examples" / "vpcflow-c" / "bench_native.c")], env=zig_env(), check=True)
    out = subprocess.run([str(exe), str(seconds)], capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


# Rows per pubsub_go.decode call in mapInArrow: Spark's Arrow batch,
# spark.sql.execution.arrow.maxRecordsPerBatch (default 10,000).
SPARK_ARROW_ROWS = 10_000


def via_decode(module: Path, engine: str, seconds: float, rows: int = ROWS) -> tuple[float, float]:
    """The C example through pubsub_go.decode (the C decoder API, memory cap
    and time limit on) on engine, rows payloads per call: MB/s by the wall
    clock and by this thread's CPU time (a call into the library decodes on
    the calling thread)."""
    import pyarrow as pa

    import pubsub_go

    payloads = pa.array([vpc_line(i % ROWS) for i in range(rows)], pa.binary())
    size = sum(len(vpc_line(i % ROWS)) for i in range(rows))
    assert pubsub_go.decode(payloads, decoder=str(module), engine=engine).num_rows == rows
    n, start, cpu0 = 0, time.perf_counter(), time.thread_time()
    while time.perf_counter() - start < seconds:
        pubsub_go.decode(payloads, decoder=str(module), engine=engine)
        n += 1
    return n * size / (time.perf_counter() - start) / 1e6, n * size / (time.thread_time() - cpu0) / 1e6


def guest_alone(module: Path, seconds: float, rows: int = ROWS) -> dict[str, tuple[float, float]]:
    """The C example's pg_decode called in a loop by wasmtime-py on one
    batch of rows lines laid out as bench_native.c lays it out: the guest's code as
    Cranelift compiles it with no host work around it (no input copy, no
    output read), the ceiling of any host built on wasmtime. MB/s by the
    wall clock and by this thread's CPU time (key "guest/wasmtime-py").

    wasmtime-py's own cost of a call (argument and result conversion and a
    ctypes call, on the scale of the guest's work on a 1,000-row batch) is
    in that figure but in no Go host's; key "guest/wasmtime-py/net" has it taken
    out, as measured alongside on pg_abi_version (no arguments, so a little
    less than pg_decode's: the net figure errs low)."""
    import wasmtime

    lines = [vpc_line(i) for i in range(rows)]
    offs = [0]
    for line in lines:
        offs.append(offs[-1] + len(line))
    batch = struct.pack(f"<{rows + 2}I", rows, *offs) + b"".join(lines)
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    ex = wasmtime.Instance(store, wasmtime.Module.from_file(engine, str(module)), []).exports(store)
    mem, alloc, decode, version = ex["memory"], ex["pg_alloc"], ex["pg_decode"], ex["pg_abi_version"]
    config = alloc(store, 8)
    mem.write(store, bytes(8), config)  # no schema, no options
    if ex["pg_init"](store, config, 8):
        raise RuntimeError("pg_init failed")
    at = alloc(store, len(batch))
    mem.write(store, batch, at)
    if decode(store, at, len(batch)):
        raise RuntimeError("pg_decode failed")
    n, start, cpu0 = 0, time.perf_counter(), time.thread_time()
    while time.perf_counter() - start < seconds:
        for _ in range(10):
            decode(store, at, len(batch))
        n += 10
    wall, cpu = time.perf_counter() - start, time.thread_time() - cpu0
    calls, start, cpu0 = 20_000, time.perf_counter(), time.thread_time()
    for _ in range(calls):
        version(store)
    call_wall, call_cpu = (time.perf_counter() - start) / calls, (time.thread_time() - cpu0) / calls
    mb = n * offs[-1] / 1e6
    return {"guest/wasmtime-py": (mb / wall, mb / cpu),
            "guest/wasmtime-py/net": (mb / (wall - n * call_wall), mb / (cpu - n * call_cpu))}


def vpcflow_c_side_by_side(tmp: Path, rounds: int, seconds: float) -> dict[str, list[float]]:
    """The C example in wazero (loop counter, WithCloseOnContextDone, no time
    limit), in wasmtime in the Go host (fence, epoch interruption, probes
    alone, no time limit) as schema mode runs it, through pubsub_go.decode
    on either engine (key "decode/<engine>") and natively, in turn, rounds
    times: MB/s per round of each, by the wall clock (key: benchmark name,
    or "native") and by the thread's CPU time (key + "/cpu"), which a
    machine shared with other work disturbs far less.

    The modes the issue's ratio is about, and the guest alone on wasmtime
    (guest_alone), also run the native build just before and just after
    them; the mean of the two (key + "@native") is what their ratio divides
    by: on this machine the native figure moves by ±20 % within a round,
    and a native run 20 s away says little about the machine while a mode
    ran."""
    exe, test = tmp / "vpcflow_bench", tmp / "decode.test"
    src = ROOT / "wasm-decoders"
    subprocess.run(["bash", str(src / "build-c.sh"), "--native", str(exe),
                    str(src / "examples" / "vpcflow-c" / "vpcflow.c"),
                    str(src / "examples" / "vpcflow-c" / "bench_native.c")], env=zig_env(), check=True)
    pkg = ROOT / "go" / "internal" / "decode"
    subprocess.run(["go", "test", "-c", "-o", str(test), "."], cwd=pkg, check=True)
    c_wasm = vpcflow_modules(tmp)["c"]
    res: dict[str, list[float]] = {}

    def add(key: str, wall: float, cpu: float) -> None:
        res.setdefault(key, []).append(wall)
        res.setdefault(key + "/cpu", []).append(cpu)

    def native(rows: int = ROWS) -> tuple[float, float]:
        nat = subprocess.run([str(exe), str(seconds), str(rows)], capture_output=True, text=True,
                             check=True).stdout.split()
        return float(nat[0]), float(nat[2])

    def go_bench_run(pattern: str) -> dict[str, tuple[float, float]]:
        out = subprocess.run([str(test), "-test.run", "^$", "-test.bench", pattern,
                              "-test.benchtime", f"{seconds}s", "-test.cpu", "1"], cwd=pkg, env=zig_env(),
                             capture_output=True, text=True, check=True, timeout=600).stdout
        return {m.group(1): (float(m.group(3)), float(m.group(4) or 0))
                for m in re.finditer(r"^(Benchmark\w+)\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) MB/s"
                                     r"(?:\s+([\d.]+) cpu-MB/s)?", out, re.M)}

    def bracketed(key: str, measure: Callable[[], tuple[float, float] | dict[str, tuple[float, float]]],
                  rows: int = ROWS) -> None:
        """measure between two native runs (on batches of rows lines); a dict
        is several keys' figures from one measurement (each divided by the
        same native runs)."""
        before = native(rows)
        got = measure()
        after = native(rows)
        for k, (wall, cpu) in (got if isinstance(got, dict) else {key: got}).items():
            add(k, wall, cpu)
            add(k + "@native", (before[0] + after[0]) / 2, (before[1] + after[1]) / 2)

    for _ in range(rounds):
        bracketed("BenchmarkVpcflowCWasmtime", lambda: go_bench_run("^BenchmarkVpcflowCWasmtime$")[
            "BenchmarkVpcflowCWasmtime"])
        bracketed("decode/wasmtime", lambda: via_decode(c_wasm, "wasmtime", seconds))
        bracketed("decode/wasmtime/spark-batch", lambda: via_decode(c_wasm, "wasmtime", seconds, SPARK_ARROW_ROWS))
        bracketed("guest/wasmtime-py", lambda: guest_alone(c_wasm, seconds))
        bracketed("guest/wasmtime-py/spark-batch", lambda: {
            "guest/wasmtime-py/spark-batch": guest_alone(c_wasm, seconds, SPARK_ARROW_ROWS)["guest/wasmtime-py"]},
            SPARK_ARROW_ROWS)
        add("decode/wazero", *via_decode(c_wasm, "wazero", seconds))
        for name, (wall, cpu) in go_bench_run("^BenchmarkVpcflowCWasm(CloseOnDone|NoTimeLimit|timeEpoch|timeProbes"
                                              "|timeNoTimeLimit)?$").items():
            add(name, wall, cpu)
        add("native", *native())
    return res


SBS_MODES = (("BenchmarkVpcflowCWasm", "wazero, time limit by loop counter (production)"),
             ("BenchmarkVpcflowCWasmCloseOnDone", "wazero, time limit by WithCloseOnContextDone"),
             ("BenchmarkVpcflowCWasmNoTimeLimit", "wazero, no time limit"),
             ("BenchmarkVpcflowCWasmtime", "**wasmtime in the Go host, time limit by memory fence "
              "(production where installed)** — schema mode's decoder"),
             ("BenchmarkVpcflowCWasmtimeEpoch", "wasmtime in the Go host, time limit by epoch interruption "
              "(modules probe.go cannot probe)"),
             ("BenchmarkVpcflowCWasmtimeProbes", "wasmtime in the Go host, probes but no fence armed"),
             ("BenchmarkVpcflowCWasmtimeNoTimeLimit", "wasmtime in the Go host, no time limit"),
             ("decode/wasmtime", "**through `pubsub_go.decode`, engine wasmtime** (memory cap + time limit), "
              f"{ROWS:,} rows a call"),
             ("decode/wasmtime/spark-batch", "**through `pubsub_go.decode`, engine wasmtime**, "
              f"{SPARK_ARROW_ROWS:,} rows a call (Spark's Arrow batch in mapInArrow)"),
             ("guest/wasmtime-py", "the guest alone on wasmtime (wasmtime-py calling `pg_decode` in a loop: "
              "no host work, no sandbox limits)"),
             ("guest/wasmtime-py/net", "the same, less wasmtime-py's own cost of a call (measured on "
              "`pg_abi_version` alongside)"),
             ("guest/wasmtime-py/spark-batch", f"the guest alone on wasmtime, {SPARK_ARROW_ROWS:,} rows a call "
              "(wasmtime-py's cost of a call a tenth as heavy), against the native build on the same batch"),
             ("decode/wazero", "through `pubsub_go.decode`, engine wazero (memory cap + time limit), "
              f"{ROWS:,} rows a call"),
             ("native", "native (build-c.sh --native)"))


def side_by_side_table(sbs: dict[str, list[float]]) -> list[str]:
    """Markdown rows: per mode, median (min–max) of the per-round MB/s and of
    the per-round ratio to the native build (its runs around the mode where
    it has them, key + "@native"), by wall clock and CPU time."""
    def spread(v: list[float], pct: bool = False) -> str:
        f = (lambda x: f"{100 * x:.0f} %") if pct else (lambda x: f"{x:.1f}")
        return f"{f(statistics.median(v))} ({f(min(v))}–{f(max(v))})" if v else "–"

    def per_round(a: list[float], b: list[float]) -> list[float]:
        return [x / y for x, y in zip(a, b, strict=True)] if a and len(a) == len(b) else []

    def base(k: str, clock: str = "") -> list[float]:
        """The native figures k's ratio divides by: its own brackets, or the round's."""
        return sbs.get(k + "@native" + clock, sbs.get("native" + clock, []))

    return ["| build | MB/s (wall) | ÷ native (wall) | MB/s (thread CPU) | ÷ native (CPU) |",
            "| --- | ---: | ---: | ---: | ---: |",
            *(f"| {label}{' ¹' if k + '@native' in sbs else ''} | {spread(sbs[k])} | "
              f"{spread(per_round(sbs[k], base(k)), pct=True)} | {spread(sbs.get(k + '/cpu', []))} | "
              f"{spread(per_round(sbs.get(k + '/cpu', []), base(k, '/cpu')), pct=True)} |"
              for k, label in SBS_MODES if k in sbs),
            "",
            "¹ Divided by the native build's runs just before and just after it in the same round (their mean);",
            "the other rows by the native run at the end of the round."]


def vpcflow_wasmtime(modules: dict[str, Path], seconds: float) -> dict[str, float]:
    import pyarrow as pa

    from pubsub_go.decoders import Decoder

    payloads = pa.array([vpc_line(i) for i in range(ROWS)], pa.binary())
    size = sum(len(vpc_line(i)) for i in range(ROWS))
    res = {}
    for sdk, path in modules.items():
        with Decoder(path) as dec:
            assert dec.decode(payloads)[1].null_count == ROWS
            res[sdk] = timed(lambda d=dec: d.decode(payloads), size, seconds)
    return res


def native_api(seconds: float) -> dict[str, float]:
    """pubsub_go.decode: the native decoders through the C decoder API."""
    import pyarrow as pa

    import pubsub_go

    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("tags", pa.list_(pa.string())),
                        ("score", pa.float64()), ("at", pa.timestamp("us", tz="UTC"))])
    res = {}
    for name, gen, opts in [("json", json_payload, {}), ("avro", avro_payload, {"avro_schema": AVRO_SCHEMA})]:
        payloads = pa.array([gen(i) for i in range(ROWS)], pa.binary())
        size = sum(len(gen(i)) for i in range(ROWS))
        assert pubsub_go.decode(payloads, format=name, schema=schema, **opts).column(5).null_count == ROWS
        res[name] = timed(lambda p=payloads, n=name, o=opts: pubsub_go.decode(p, format=n, schema=schema, **o),
                          size, seconds)
    return res


def python_host(seconds: float) -> dict[str, float]:
    import pyarrow as pa

    from pubsub_go.decoders import Decoder

    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("tags", pa.list_(pa.string())),
                        ("score", pa.float64()), ("at", pa.timestamp("us", tz="UTC"))])
    res = {}
    for name, gen, opts in [("json", json_payload, {}), ("avro", avro_payload,
                                                          {"avro_schema": json.dumps(AVRO_SCHEMA)})]:
        payloads = pa.array([gen(i) for i in range(ROWS)], pa.binary())
        size = sum(len(p) for p in payloads.to_pylist())
        with Decoder(name, schema, opts) as dec:
            batch, errs = dec.decode(payloads)
            assert errs.null_count == ROWS, errs
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                dec.decode(payloads)
                n += 1
            res[name] = n * size / (time.perf_counter() - start) / 1e6
    return res


def spark_jobs(rows: int, with_avro: bool) -> dict[str, float]:
    sys.path.insert(0, str(ROOT / "tests"))
    from sparkutil import spark_session

    conf = {"spark__sql__session__timeZone": "UTC"}
    if with_avro:
        conf["spark__jars__packages"] = SPARK_AVRO
    spark = spark_session(master="local[1]", app="decode-bench", **conf)
    res = {}
    try:
        reps = max(1, rows // ROWS)
        for name, gen, expr in [
            ("json", json_payload, f"from_json(CAST(payload AS STRING), '{DDL}')"),
            ("avro", avro_payload, f"from_avro(payload, '{json.dumps(AVRO_SCHEMA)}')"),
        ]:
            if name == "avro" and not with_avro:
                continue
            base = spark.createDataFrame([(gen(i),) for i in range(ROWS)], "payload BINARY")
            df = base.crossJoin(spark.range(reps).withColumnRenamed("id", "rep")).select("payload").cache()
            size = df.selectExpr("sum(length(payload))").first()[0]
            best = None
            for _ in range(3):  # best of 3: the first run also warms up the JIT
                start = time.perf_counter()
                df.selectExpr(f"{expr} AS r").write.format("noop").mode("overwrite").save()
                el = time.perf_counter() - start
                best = el if best is None else min(best, el)
            res[name] = size / best / 1e6
            df.unpersist()
    finally:
        spark.stop()
    return res


def protobuf_payload(i: int) -> bytes:  # = benchProtoEvent in go/internal/decode/protobuf_test.go
    import base64

    from google.protobuf import json_format
    sys.path.insert(0, str(ROOT / "tests"))
    from protobuf_vectors import Event

    text = (f'{{"id": "{i}", "title": "{"t" * 440}",'
            f' "inner": {{"name": "inner-{i}", "nums": [1, 2, 3, 4, 5, 6, 7, 8]}},'
            f' "items": [{{"name": "alpha-{i}", "nums": [1, 2]}}, {{"name": "beta", "nums": [3]}}, {{"name": "gamma"}},'
            f' {{"name": "delta", "nums": [4, 5, 6]}}], "counts": {{"clicks": "{i}", "views": "12345", "shares": "7",'
            f' "likes": "99"}}, "color": "GREEN", "at": "2024-05-06T07:08:09.123456Z", "maybe": "{i}",'
            f' "text": "{"x" * 200}", "opt": 1, "u32": 77, "s64": "-12345", "score": 0.25,'
            f' "blob": "{base64.b64encode(b"b" * 150).decode()}", "colors": ["RED", "GREEN", "RED"],'
            f' "byid": {{"1": {{"name": "one"}}, "2": {{"name": "two"}}}}, "flag": true}}')
    return json_format.Parse(text, Event()).SerializeToString()


def protobuf_descriptor_file(tmp: Path) -> Path:
    """The message's descriptor set with its imports, as from_protobuf needs it."""
    sys.path.insert(0, str(ROOT / "tests"))
    from protobuf_vectors import descriptor_set_with_imports
    path = tmp / "pgtest.desc"
    path.write_bytes(descriptor_set_with_imports())
    return path


def protobuf_rows(tmp: Path, seconds: float, spark_rows: int, with_spark: bool) -> dict[str, float | str | None]:
    """MB/s of the protobuf decoder natively (per CPU second of the decoding
    thread), through pubsub_go.decode, and Spark's from_protobuf; the
    payload size."""
    import pyarrow as pa

    import pubsub_go

    res: dict[str, float | str | None] = {}
    go = subprocess.run(["go", "test", "-run", "^$", "-bench", "ProtobufNative", "-benchtime", f"{seconds}s",
                         "-cpu", "1", "-count", "1", "."], cwd=ROOT / "go" / "internal" / "decode",
                        capture_output=True, text=True, timeout=1800)
    m = re.search(r"BenchmarkDecodeProtobufNative\s.*?([\d.]+) MB/s\s+([\d.]+) cpu-MB/s", go.stdout)
    res["native_wall"], res["native"] = (float(m.group(1)), float(m.group(2))) if m else (None, None)
    desc = protobuf_descriptor_file(tmp)
    payloads = [protobuf_payload(i) for i in range(ROWS)]
    res["size"] = sum(map(len, payloads)) / ROWS
    arr = pa.array(payloads, pa.binary())
    opts = {"protobuf_descriptor_set": desc.read_bytes(), "protobuf_message": "pgtest.Event"}
    assert pubsub_go.decode(arr, format="protobuf", **opts).column("__decode_error").null_count == ROWS
    res["api"] = timed(lambda: pubsub_go.decode(arr, format="protobuf", **opts), sum(map(len, payloads)), seconds)
    res["java_wall"], res["java"] = protobuf_java_parse(tmp, payloads, desc, seconds)
    if with_spark:
        res["spark"], res["spark_cpu"] = spark_from_protobuf(payloads, desc, spark_rows)
    return res


PROTOBUF_JAVA = "com.google.protobuf:protobuf-java:4.33.5"


def protobuf_java_parse(tmp: Path, payloads: list[bytes], desc: Path, seconds: float) -> tuple[float | None, ...]:
    """protobuf-java's DynamicMessage.parseFrom alone, MB/s by the wall
    clock and by the thread's CPU time (bench/tools/ProtobufParseBound.java;
    protobuf-java from Maven through mvn)."""
    group, artifact, version = PROTOBUF_JAVA.split(":")
    jar = Path.home() / ".m2" / "repository" / group.replace(".", "/") / artifact / version
    jar = jar / f"{artifact}-{version}.jar"
    try:
        if not jar.exists():
            subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact={PROTOBUF_JAVA}"], check=True,
                           capture_output=True, timeout=600)
        src = ROOT / "bench" / "tools" / "ProtobufParseBound.java"
        subprocess.run(["javac", "-d", str(tmp), "-cp", str(jar), str(src)], check=True, capture_output=True,
                       timeout=600)
        (tmp / "payloads.hex").write_text("\n".join(p.hex() for p in payloads))
        out = subprocess.run(["java", "-cp", f"{jar}:{tmp}", "ProtobufParseBound", str(desc), "Event",
                              str(tmp / "payloads.hex"), str(seconds)], check=True, capture_output=True, text=True,
                             timeout=600).stdout.split()
        return float(out[1]), float(out[3])
    except (OSError, subprocess.SubprocessError) as e:
        print(f"protobuf-java not measured: {e}", file=sys.stderr)
        return None, None


def spark_from_protobuf(payloads: list[bytes], desc: Path, rows: int) -> tuple[float | str, float | None]:
    """from_protobuf's MB/s on the same payloads by the wall clock and per
    CPU second of Spark's JVM (all its threads: local mode runs the task,
    the JIT and the garbage collector in it), or why it could not run."""
    sys.path.insert(0, str(ROOT / "tests"))
    from sparkutil import classpath_conf, spark_session, stop_spark

    stop_spark()
    try:
        spark = spark_session(master="local[1]", app="decode-bench-protobuf", spark__sql__session__timeZone="UTC",
                              **classpath_conf(SPARK_PROTOBUF))
    except Exception as e:  # the package did not resolve: the JVM does not start
        return f"not run: {SPARK_PROTOBUF} could not be had ({type(e).__name__})", None
    try:
        base = spark.createDataFrame([(p,) for p in payloads], "payload BINARY")
        df = base.crossJoin(spark.range(max(1, rows // ROWS)).withColumnRenamed("id", "rep")).select("payload").cache()
        size = df.selectExpr("sum(length(payload))").first()[0]
        expr = f"from_protobuf(payload, 'pgtest.Event', '{desc}')"
        jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        best = best_cpu = None
        # The JIT takes several runs over 200k rows to settle: best of 6.
        for _ in range(6):
            cpu0, start = jvm_cpu_seconds(jvm_pid), time.perf_counter()
            df.selectExpr(f"{expr} AS r").write.format("noop").mode("overwrite").save()
            el, cpu = time.perf_counter() - start, jvm_cpu_seconds(jvm_pid) - cpu0
            best = el if best is None else min(best, el)
            best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
        return size / best / 1e6, (size / best_cpu / 1e6 if best_cpu else None)
    except Exception as e:
        return f"not run: {str(e).splitlines()[0][:200]}", None
    finally:
        spark.stop()


def jvm_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def protobuf_table(rounds: list[dict[str, float | str | None]]) -> list[str]:
    """The protobuf rows: each figure's median over the rounds, with its
    min–max when there are several (the machine is shared); ratios per round."""
    def cell(vals: list[float | str | None], unit: str = "") -> str:
        nums = [v for v in vals if isinstance(v, float)]
        if not nums:
            why = next((v for v in vals if isinstance(v, str)), None)
            return "–" if why is None else f"– ({why})"
        med = f"{statistics.median(nums):.1f}{unit}"
        return med if len(nums) == 1 else f"{med} ({min(nums):.1f}–{max(nums):.1f})"

    def col(key: str) -> list[float | str | None]:
        return [r.get(key) for r in rounds]

    def ratio(num: str, den: str) -> list[float | str | None]:
        return [r[num] / r[den] if isinstance(r.get(num), float) and isinstance(r.get(den), float) else None
                for r in rounds]

    n = len(rounds)
    return [
        f"## Protobuf: {ROWS} payloads of {rounds[0]['size']:.0f} B (nested, repeated, map, enum, Timestamp, "
        "wrapper, oneof) into the columns from_protobuf derives",
        "",
        f"| decoder | MB/s{'' if n == 1 else f', median (min–max) of {n} rounds'} |",
        "| --- | ---: |",
        f"| **native in the Go data plane — schema mode** (`format=protobuf`), per CPU second of the decoding "
        f"thread | {cell(col('native'))} |",
        f"| the same, wall clock | {cell(col('native_wall'))} |",
        f"| native, through `pubsub_go.decode` from Python (C decoder API) | {cell(col('api'))} |",
        f"| protobuf-java `DynamicMessage.parseFrom` alone, per CPU second (from_protobuf's first step: an upper "
        f"bound for it) | {cell(col('java'))} |",
        f"| the same, wall clock | {cell(col('java_wall'))} |",
        f"| Spark from_protobuf (local[1], noop sink), wall clock | {cell(col('spark'))} |",
        f"| the same, per CPU second of Spark's JVM (all its threads) | {cell(col('spark_cpu'))} |",
        f"| schema mode vs Spark (per CPU second: native's thread, Spark's JVM) | "
        f"{cell(ratio('native', 'spark_cpu'), 'x')} |",
        f"| schema mode vs Spark (wall clock both) | {cell(ratio('native_wall', 'spark'), 'x')} |",
        f"| schema mode vs `DynamicMessage.parseFrom` alone (CPU time) | {cell(ratio('native', 'java'), 'x')} |",
    ]


def replace_protobuf_section(text: str, section: list[str]) -> str:
    """text (decode_results.md) with its protobuf section replaced by
    section, or put before the example decoder's when it has none."""
    lines = text.split("\n")
    heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
    old = next((i for i in heads if lines[i].startswith("## Protobuf:")), None)
    if old is not None:
        end = next((i for i in heads if i > old), len(lines))
        return "\n".join(lines[:old] + section + [""] + lines[end:])
    at = next((i for i in heads if lines[i].startswith("## The example user decoder")), len(lines))
    return "\n".join(lines[:at] + section + [""] + lines[at:])


def main() -> None:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="time per Go/Python measurement")
    ap.add_argument("--spark-rows", type=int, default=200_000)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--no-spark-avro", action="store_true", help="skip from_avro (needs spark-avro from Maven)")
    ap.add_argument("--no-e2e", action="store_true", help="skip Spark end to end (bench/tools/spark_decode_e2e.py)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="side-by-side rounds of the C example; rounds of --protobuf-only")
    ap.add_argument("--c-example-only", action="store_true",
                    help="only the C example side by side: print its table, write nothing")
    ap.add_argument("--protobuf-only", action="store_true",
                    help="only the protobuf rows, --rounds times: print their table, replace its section of --out")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "decode_results.md"))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="decode-bench-"))

    if args.protobuf_only:
        section = protobuf_table([protobuf_rows(tmp, args.seconds, args.spark_rows, not args.no_spark)
                                  for _ in range(args.rounds)])
        print("\n".join(section))
        out = Path(args.out)
        if out.exists():
            out.write_text(replace_protobuf_section(out.read_text(), section))
        return

    if args.c_example_only:
        print("\n".join(side_by_side_table(vpcflow_c_side_by_side(tmp, args.rounds, args.seconds / 2))))
        return
    print("Go host: native built-ins, WebAssembly (wazero), example decoders...", flush=True)
    go = go_bench(ROOT / "go" / "internal" / "decode", "DecodeJSON|DecodeAvro|Vpcflow", ["."], args.seconds,
                  env=zig_env())
    print("decoding cores natively...", flush=True)
    native = go_bench(ROOT / "wasm-decoders", "Native", ["./jsondec", "./avrodec", "./examples/vpcflow"],
                      args.seconds)
    print("C example natively...", flush=True)
    c_native = vpcflow_c_native(tmp, args.seconds)
    print(f"C example side by side ({args.rounds} rounds)...", flush=True)
    sbs = vpcflow_c_side_by_side(tmp, args.rounds, args.seconds / 2)
    print("pubsub_go.decode...", flush=True)
    api = native_api(args.seconds)
    print("Python host (wasmtime)...", flush=True)
    py = python_host(args.seconds)
    vpc_py = vpcflow_wasmtime(vpcflow_modules(tmp), args.seconds)
    spark = {}
    if not args.no_spark:
        print("Spark from_json/from_avro...", flush=True)
        spark = spark_jobs(args.spark_rows, not args.no_spark_avro)
    print("protobuf...", flush=True)
    pb = protobuf_rows(tmp, args.seconds, args.spark_rows, not args.no_spark)
    e2e = {}
    e2e_options = "tuned options"
    if not args.no_spark and not args.no_e2e:
        print("Spark end to end at 1 KB JSON...", flush=True)
        sys.path.insert(0, str(ROOT / "bench" / "tools"))
        import spark_decode_e2e

        e2e = spark_decode_e2e.run()
        e2e_options += ": " + ", ".join(f"`{k}={v}`" for k, v in spark_decode_e2e.TUNED.items())

    def per_round(a: list[float], b: list[float]) -> list[float]:
        return [x / y for x, y in zip(a, b, strict=True)]

    def spread(v: list[float], pct: bool = False) -> str:
        f = (lambda x: f"{100 * x:.0f} %") if pct else (lambda x: f"{x:.1f}")
        return f"{f(statistics.median(v))} ({f(min(v))}–{f(max(v))})"

    def fmt(v: float | None) -> str:
        return "–" if v is None else f"{v:.1f}"

    def ratio(a: float | None, b: float | None) -> str:
        return "–" if a is None or not b else f"{a / b:.1f}x"

    def pct(a: float | None, b: float | None) -> str:
        return "–" if a is None or not b else f"{100 * a / b:.0f} %"

    nj, na = go.get("BenchmarkDecodeJSONNative"), go.get("BenchmarkDecodeAvroNative")
    rows = [
        ("**native in the Go data plane — schema mode** (`format=json/avro`)", nj, na),
        ("native, through `pubsub_go.decode` from Python (C decoder API)", api.get("json"), api.get("avro")),
        ("WebAssembly build, Go host (wazero, memory cap + time limit: loop counter)",
         go.get("BenchmarkDecodeJSONWasm"), go.get("BenchmarkDecodeAvroWasm")),
        ("WebAssembly build, Go host (wazero, time limit by WithCloseOnContextDone)",
         go.get("BenchmarkDecodeJSONWasmCloseOnDone"), go.get("BenchmarkDecodeAvroWasmCloseOnDone")),
        ("WebAssembly build, Python host (wasmtime)", py.get("json"), py.get("avro")),
        ("decoding core alone, native Go (IPC output in Go memory)", native.get("BenchmarkDecodeJSONNative"),
         native.get("BenchmarkDecodeAvroNative")),
        ("Spark from_json / from_avro (local[1], noop sink)", spark.get("json"), spark.get("avro")),
    ]
    go_native, c_wazero = native.get("BenchmarkVpcflowNative"), go.get("BenchmarkVpcflowCWasm")
    vrows = [
        ("Go (ABI 1: IPC)", go.get("BenchmarkVpcflowGoWasm"), go.get("BenchmarkVpcflowGoWasmtime"), vpc_py.get("go"),
         go_native),
        ("C (ABI 2: buffer layout; zig cc -O2 -flto, both builds)", c_wazero, go.get("BenchmarkVpcflowCWasmtime"),
         vpc_py.get("c"), c_native),
    ]
    sizes = (sum(len(json_payload(i)) for i in range(ROWS)), sum(len(avro_payload(i)) for i in range(ROWS)),
             sum(len(vpc_line(i)) for i in range(ROWS)))
    lines = [
        "# Decode throughput",
        "",
        f"MB/s of payload per core (one goroutine or thread, `-cpu 1`), one run of `python bench/tools/decode_bench.py`"
        f" on {platform.machine()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')} (a machine shared with"
        " other work: expect ±30 %).",
        "",
        f"## Built-in decoders: {ROWS} payloads per batch (JSON {sizes[0] / ROWS:.0f} B, Avro "
        f"{sizes[1] / ROWS:.0f} B each) into `{DDL}`",
        "",
        "| decoder | JSON MB/s | Avro MB/s |",
        "| --- | ---: | ---: |",
        *(f"| {n} | {fmt(j)} | {fmt(a)} |" for n, j, a in rows),
        f"| schema mode vs Spark | {ratio(nj, spark.get('json'))} | {ratio(na, spark.get('avro'))} |",
        "",
        *protobuf_table([pb]),
        "",
        f"## The example user decoder (VPC flow log lines, {sizes[2] / ROWS:.0f} B each) per guest SDK",
        "",
        "| SDK | wazero (sandbox on) | wasmtime in Go (sandbox on) | wasmtime-py | native | wazero / native "
        "| wasmtime in Go / native | wasmtime-py / native |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(f"| {n} | {fmt(w)} | {fmt(g)} | {fmt(t)} | {fmt(v)} | {pct(w, v)} | {pct(g, v)} | {pct(t, v)} |"
          for n, w, g, t, v in vrows),
        "",
        f"The time limit's cost in wazero (C example): {fmt(c_wazero)} MB/s with the loop counter, "
        f"{fmt(go.get('BenchmarkVpcflowCWasmNoTimeLimit'))} MB/s with no time limit at all.",
        "",
        f"### The C example in wazero and natively, side by side ({args.rounds} rounds, each mode in turn)",
        "",
        "Per-round MB/s and per-round ratio to the native build of the same round: median (min–max);",
        "by the wall clock, and by the CPU time of the thread that decodes (the garbage collector's",
        "threads not counted), which other work on the machine disturbs far less.",
        "",
        *side_by_side_table(sbs),
        "",
        "wazero and wasmtime figures include the host's work (input copy, output conversion into Arrow",
        "arrays; through `pubsub_go.decode` also the Python call and the batch's export to Python);",
        "native ones are the guest code alone. Compilation is cached and not included.",
        "",
        "## Spark end to end: 1 KB JSON messages, 5 typed columns (`bench/tools/spark_decode_e2e.py`)",
        "",
        f"bench/loadserver `--payload-json` → `pubsub-go` source (2 partitions, {e2e_options}) → noop sink, local[2].",
        "",
        "Each mode measured once per round, side by side (`wasm decoder`: the JSON decoder's WebAssembly build as "
        f"a user's `decoder=` module, on the default engine), {len(next(iter(e2e.values()), []))} rounds;"
        " median (min–max).",
        "",
        "| figure | median | min | max |",
        "| --- | ---: | ---: | ---: |",
        *(f"| {k} | {med:,.2f} | {lo:,.2f} | {hi:,.2f} |"
          for k, (med, lo, hi) in (spark_decode_e2e.summary(e2e).items() if e2e else [])),
        "",
    ]
    text = "\n".join(lines)
    # The notes after NOTES (written by hand: what was tried and why) stay.
    out = Path(args.out)
    if out.exists() and NOTES in out.read_text():
        text += "\n" + NOTES + out.read_text().split(NOTES, 1)[1]
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
