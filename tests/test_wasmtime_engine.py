"""The wasmtime engine of the Go decoder host (engine="wasmtime", issue 41),
loaded at run time from the installed wasmtime package: hostile modules are
stopped within their limits and the process carries on, and with
wasmtime's trap handlers installed beside Go's, a Go panic is still
recovered and Python's own signal handling still works."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest
import wasmtime

import native_debug
import pubsub_go
from guests import build_guest
from pubsub_go import wasmtime_library
from pubsub_go.errors import AbortedError, DeadlineExceededError, InvalidArgumentError, ResourceExhaustedError

# An ABI 1 module whose pg_decode is DECODE (the Go host decodes an empty
# batch when it opens a decoder, so the module misbehaves at open).
ABI_WAT = """(module
  (memory (export "memory") 1)
  (func (export "pg_abi_version") (result i32) i32.const 1)
  (func (export "pg_alloc") (param i32) (result i32) i32.const 1024)
  (func (export "pg_free") (param i32))
  (func (export "pg_init") (param i32 i32) (result i32) i32.const 0)
  (func $decode (export "pg_decode") (param i32 i32) (result i32) DECODE)
  (func (export "pg_output") (result i64) i64.const 0)
  (func (export "pg_error") (result i64) i64.const 0))"""
TRAP, RECURSE, LOOP = "unreachable", "(call $decode (local.get 0) (local.get 1))", "(loop $l (br $l)) i32.const 0"


def abi_module(tmp: Path, name: str, decode: str) -> str:
    path = tmp / f"{name}.wasm"
    path.write_bytes(wasmtime.wat2wasm(ABI_WAT.replace("DECODE", decode)))
    return str(path)


@pytest.fixture(scope="module")
def hostile_wasm(tmp_path_factory) -> Path:
    return build_guest("internal/testguests/hostile", tmp_path_factory.mktemp("hostile"))


def test_the_library_is_found():
    lib = wasmtime_library.find()
    assert lib is not None and lib.endswith("/_libwasmtime.so") and Path(lib).is_file()


def test_without_the_library_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(wasmtime_library, "find", lambda: None)
    with pytest.raises(InvalidArgumentError, match=r"pip install 'pubsub-go\[wasm\]'"):
        pubsub_go.decode(pa.array([b"x"]), format="json", schema="x INT", engine="wasmtime")
    with pytest.raises(InvalidArgumentError, match="engine='v8'; expected one of auto, wazero, wasmtime"):
        pubsub_go.decode(pa.array([b"x"]), format="json", schema="x INT", engine="v8")


def test_hostile_modules_are_stopped_and_the_process_carries_on(hostile_wasm, tmp_path):
    dec = str(hostile_wasm)
    # Compiling the module (once per process) is not part of the time limit's test.
    assert pubsub_go.decode(pa.array([b"ok"]), decoder=dec, engine="wasmtime").column("v").to_pylist() == ["ok"]
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError, match="exceeded its time limit.*timeout_ms=500"):
        pubsub_go.decode(pa.array([b"loop"]), decoder=dec, timeout_ms=500, engine="wasmtime")
    assert time.monotonic() - start < 5
    with pytest.raises(ResourceExhaustedError, match="memory limit of 48 MiB"):
        pubsub_go.decode(pa.array([b"alloc"]), decoder=dec, memory_limit_mb=48, timeout_ms=30_000, engine="wasmtime")
    with pytest.raises(AbortedError, match="crashed.*exit_code"):
        pubsub_go.decode(pa.array([b"exit"]), decoder=dec, engine="wasmtime")
    with pytest.raises(AbortedError, match="unreachable"):
        pubsub_go.decode(pa.array([b"x"]), decoder=abi_module(tmp_path, "trap", TRAP), engine="wasmtime")
    with pytest.raises(AbortedError, match="stack overflow"):
        pubsub_go.decode(pa.array([b"x"]), decoder=abi_module(tmp_path, "recurse", RECURSE), engine="wasmtime")
    with pytest.raises(DeadlineExceededError, match="timeout_ms=300"):
        pubsub_go.decode(pa.array([b"x"]), decoder=abi_module(tmp_path, "loop", LOOP), timeout_ms=300,
                         engine="wasmtime")
    batch = pubsub_go.decode(pa.array([b"panic", b"probe", b"ok"]), decoder=dec, engine="wasmtime")
    assert "boom" in batch.column("__decode_error")[0].as_py()
    assert batch.column("v").to_pylist()[1:] == ["env=0 args=0 file=true dir=true", "ok"]
    # The same rows as wazero gives.
    assert batch.equals(pubsub_go.decode(pa.array([b"panic", b"probe", b"ok"]), decoder=dec, engine="wazero"))


SIGNALS = """
import os, signal, sys, time
import pyarrow as pa
import pubsub_go
from pubsub_go.errors import AbortedError, DeadlineExceededError, InternalError
from native_debug import debug_panic
ok = pa.array([b"ok"])
dec = {dec!r}
assert pubsub_go.decode(ok, decoder=dec, engine="wasmtime").column("v").to_pylist() == ["ok"]
for i in range(3):
    for module, error in (({trap!r}, AbortedError), ({recurse!r}, AbortedError), ({loop!r}, DeadlineExceededError)):
        try:
            pubsub_go.decode(pa.array([b"x"]), decoder=module, engine="wasmtime", timeout_ms=100)
        except error:
            pass
        else:
            raise AssertionError(f"{{module}}: no {{error.__name__}}")
    try:
        debug_panic()  # a Go runtime panic in an exported call
    except InternalError as e:
        assert "nil map" in str(e), e
    else:
        raise AssertionError("no panic")
try:
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, with wasmtime's handlers in place
    time.sleep(5)
    raise AssertionError("no KeyboardInterrupt")
except KeyboardInterrupt:
    pass
got = []
signal.signal(signal.SIGTERM, lambda *a: got.append(a[0]))
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(0.1)
assert got == [signal.SIGTERM], got
assert pubsub_go.decode(ok, decoder=dec, engine="wasmtime").column("v").to_pylist() == ["ok"]
print("alive")
"""


def test_traps_panics_and_python_signals_coexist(hostile_wasm, tmp_path):
    """In a fresh interpreter with the test build of the library (its
    panic hook): a guest trap, a guest stack overflow and an endless loop
    (each contained), Go panics, Ctrl-C and SIGTERM, in turn."""
    lib = native_debug.build(tmp_path)
    code = SIGNALS.format(dec=str(hostile_wasm), trap=abi_module(tmp_path, "trap", TRAP),
                          recurse=abi_module(tmp_path, "recurse", RECURSE), loop=abi_module(tmp_path, "loop", LOOP))
    p = native_debug.run(lib, textwrap.dedent(code), timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "alive", (p.returncode, p.stdout, p.stderr[-3000:])


AUTO = """
import sys
if {absent!r}:
    sys.modules["wasmtime"] = None  # as if the package were not installed: find_spec gives None
import pyarrow as pa
import pubsub_go
from pubsub_go.errors import InvalidArgumentError
assert pubsub_go.decode(pa.array([b"ok"]), decoder={dec!r}).column("v").to_pylist() == ["ok"]
loaded = "_libwasmtime.so" in open("/proc/self/maps").read()
try:
    pubsub_go.decode(pa.array([b"ok"]), decoder={dec!r}, engine="wasmtime")
    explicit = "ok"
except InvalidArgumentError as e:
    explicit = str(e)
print(loaded, explicit)
"""


@pytest.mark.parametrize("absent", [False, True], ids=["installed", "absent"])
def test_the_default_engine_is_wasmtime_where_installed_else_wazero(hostile_wasm, absent):
    """engine="auto" (the default): wasmtime's library is loaded when the
    package is installed; without it the module decodes in wazero, and only
    an explicit engine="wasmtime" fails, saying how to install it."""
    code = AUTO.format(absent=absent, dec=str(hostile_wasm))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    loaded, explicit = p.stdout.strip().split(" ", 1)
    if absent:
        assert loaded == "False" and "pip install 'pubsub-go[wasm]'" in explicit, p.stdout
    else:
        assert loaded == "True" and explicit == "ok", p.stdout


def vpc_lines(seed: int, n: int) -> pa.Array:
    return pa.array([f"2 acct{seed}-{i} eni-{seed * 1000 + i:x} 10.{seed % 250}.0.{i % 250} 172.16.{i % 200}.1 "
                     f"{1000 + seed + i} 443 6 {seed * 7 + i} {seed * 11 + i} 1418530010 1418530070 ACCEPT OK".encode()
                     for i in range(n)], pa.binary())


def test_batches_kept_while_more_decode_do_not_change(tmp_path):
    """A batch decoded on wasmtime lies in the instance's memory until
    released (go/internal/decode/pin.go): batches kept in any number and
    released in any order, across later decodes on the same decoder, read
    what they read when decoded, which is what wazero gives (a copy)."""
    import random

    dec = str(build_guest("examples/vpcflow-c/vpcflow.c", tmp_path))
    rnd = random.Random(41)
    kept: dict[int, tuple[pa.RecordBatch, dict]] = {}
    for seed in range(60):
        batch = pubsub_go.decode(vpc_lines(seed, rnd.choice([1, 7, 300, 2000])), decoder=dec, engine="wasmtime")
        kept[seed] = (batch, batch.to_pydict())
        for s in rnd.sample(sorted(kept), k=rnd.randint(0, len(kept) // 2)):
            del kept[s]  # releases the batch (its instance returns to the pool)
        for s, (b, want) in kept.items():
            assert b.to_pydict() == want, f"batch {s} changed after batch {seed} decoded"
    for s, (b, want) in kept.items():
        assert want == pubsub_go.decode(vpc_lines(s, b.num_rows), decoder=dec, engine="wazero").to_pydict()


@pytest.mark.parametrize("engine", ["wasmtime", "wazero"])
def test_a_tail_call_loop_is_refused_at_open(tmp_path, engine):
    """return_call grows no stack and passes no loop, so neither the stack
    limit nor a probe would stop a loop of them: both engines refuse the
    module as invalid when the decoder opens (wasmtime ran it forever)."""
    dec = abi_module(tmp_path, "tail", "(return_call $decode (local.get 0) (local.get 1))")
    code = textwrap.dedent(f"""
        import pyarrow as pa, pubsub_go
        from pubsub_go.errors import InvalidArgumentError
        try:
            pubsub_go.decode(pa.array([b"x"]), decoder={dec!r}, engine={engine!r}, timeout_ms=500)
        except InvalidArgumentError as e:
            print(e)
        """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    said = p.stdout.lower()
    assert p.returncode == 0 and "invalid module" in said and "tail" in said, (p.stdout, p.stderr[-2000:])
