"""Build hook: compiles the Go data plane (and the built-in WASM decoders)
into the package, so `pip install .` gives a platform wheel that needs
nothing but libc at run time. Metadata lives in pyproject.toml."""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent
try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - wheel is a build requirement
    bdist_wheel = None


def build_native(dest: Path) -> None:
    """go build -buildmode=c-shared into dest/_lib, plus the header cffi reads."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("pubsub-go needs the Go toolchain (go >= 1.24) on PATH to build its native library")
    lib_dir = dest / "_lib"
    lib_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="1")
    subprocess.run(
        [go, "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-s -w",
         "-o", str(lib_dir / "libpubsubgo.so"), "./go/capi"],
        cwd=ROOT, env=env, check=True,
    )
    (lib_dir / "libpubsubgo.h").unlink(missing_ok=True)  # cgo's export header; we ship our own
    shutil.copy(ROOT / "go" / "include" / "pubsubgo.h", lib_dir / "pubsubgo.h")
    build_wasm = ROOT / "wasm-decoders" / "build.sh"
    if build_wasm.exists():
        subprocess.run(["bash", str(build_wasm), str(dest / "wasm")], cwd=ROOT, env=env, check=True)


class BuildPyWithGo(build_py):
    def run(self) -> None:
        super().run()
        build_native(Path(self.build_lib) / "pubsub_go")


class BinaryDistribution(Distribution):
    def has_ext_modules(self) -> bool:  # a platform wheel: it carries a native library
        return True


cmdclass = {"build_py": BuildPyWithGo}
if bdist_wheel is not None:

    class PlatformWheel(bdist_wheel):
        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat  # ABI-mode cffi: any CPython 3, one platform

    cmdclass["bdist_wheel"] = PlatformWheel

setup(cmdclass=cmdclass, distclass=BinaryDistribution)
