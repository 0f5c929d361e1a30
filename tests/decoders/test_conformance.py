"""The shared conformance vectors through the Python host, and the Go
host's output for the same vectors compared with it."""

import os
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from vectorlib import all_vectors, load, payloads, rows, schema_of

from pubsub_go.schema import MODULE_ERROR_COLUMN
from pubsub_go.wasm_authoring import Decoder

ROOT = Path(__file__).resolve().parents[2]


def decode_vector(vec: dict, wasm_dir):
    schema = schema_of(vec["schema"]) if vec.get("schema") is not None else None
    with Decoder(
        str(wasm_dir / f"{vec['format']}.wasm"), schema, vec.get("options") or {}, timeout=60
    ) as dec:
        if vec.get("expected_schema") is not None:
            assert dec.schema.equals(schema_of(vec["expected_schema"])), dec.schema
        return dec.decode(payloads(vec))


@pytest.mark.parametrize("path", all_vectors(), ids=lambda p: p.stem)
def test_vector_python_host(path, builtin_wasm):
    vec = load(path)
    batch, errors = decode_vector(vec, builtin_wasm)
    batch.validate(full=True)
    assert batch.num_rows == len(vec["expected"])
    got = rows(batch)
    for i, (g, want, err_want) in enumerate(zip(got, vec["expected"], vec["errors"], strict=True)):
        assert g == want, f"row {i}"
        err = errors[i].as_py()
        if err_want is None:
            assert err is None, f"row {i}: {err}"
        else:
            assert err is not None and err_want in err, f"row {i}: {err!r} lacks {err_want!r}"


@pytest.fixture(scope="module")
def go_results(builtin_wasm, tmp_path_factory):
    """Runs the Go host over every vector (go test), which writes each
    result as an IPC stream."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("go toolchain not found")
    out = tmp_path_factory.mktemp("go-conformance")
    env = dict(os.environ, PUBSUB_GO_CONFORMANCE_OUT=str(out), PUBSUB_GO_WASM_DIR=str(builtin_wasm))
    subprocess.run(
        [go, "test", "-count=1", "-run", "^TestConformanceVectors$", "./go/internal/decode"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=600,
    )
    return out


@pytest.mark.parametrize("build", ["wasm", "native"])
@pytest.mark.parametrize("path", all_vectors(), ids=lambda p: p.stem)
def test_go_and_python_hosts_agree(path, build, builtin_wasm, go_results):
    """wasmtime's output equals the Go host's, both for the .wasm in wazero
    and for the same decoder compiled natively (what schema mode runs)."""
    vec = load(path)
    batch, errors = decode_vector(vec, builtin_wasm)
    py = pa.RecordBatch.from_arrays(
        batch.columns + [errors], schema=batch.schema.append(pa.field(MODULE_ERROR_COLUMN, pa.string()))
    )
    suffix = ".native.arrows" if build == "native" else ".arrows"
    go = pa.ipc.open_stream((go_results / f"{path.stem}{suffix}").read_bytes()).read_all().combine_chunks()
    go = go.to_batches()[0] if go.num_rows else pa.RecordBatch.from_pylist([], schema=go.schema)
    assert go.schema.equals(py.schema, check_metadata=True), f"{go.schema}\n!=\n{py.schema}"
    # Compared through Python values (repr, so that NaN equals NaN).
    assert repr(go.to_pylist()) == repr(py.to_pylist()), (
        f"Go host:\n{go.to_pylist()}\nPython host:\n{py.to_pylist()}"
    )
