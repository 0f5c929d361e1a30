"""Build hook: compiles the Go data plane (and the built-in WASM decoders)
into the package, so a wheel needs nothing but libc at run time. Metadata
lives in pyproject.toml; which Go / C compiler / target is used, and so the
wheel's platform tag, is decided in build_support/pubsub_go_toolchain.py."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "build_support"))
import pubsub_go_toolchain as toolchain  # noqa: E402

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:  # pragma: no cover - wheel is a build requirement
        bdist_wheel = None


def _package_version() -> str:
    ns: dict = {}
    exec((ROOT / "python" / "pubsub_go" / "_version.py").read_text(), ns)
    return ns["__version__"]


def build_native(dest: Path) -> None:
    """go build -buildmode=c-shared into dest/_lib, plus the header cffi reads."""
    tc = toolchain.select()
    print(f"pubsub-go: building libpubsubgo with {tc.describe}", flush=True)
    lib_dir = dest / "_lib"
    lib_dir.mkdir(parents=True, exist_ok=True)
    ldflags = f"-s -w -X main.Version={_package_version()}"
    subprocess.run(
        [tc.go, "build", "-buildmode=c-shared", "-trimpath", f"-ldflags={ldflags}",
         "-o", str(lib_dir / "libpubsubgo.so"), "./go/capi"],
        cwd=ROOT, env=tc.env, check=True,
    )
    (lib_dir / "libpubsubgo.h").unlink(missing_ok=True)  # cgo's export header; we ship our own
    shutil.copy(ROOT / "go" / "include" / "pubsubgo.h", lib_dir / "pubsubgo.h")
    build_wasm = ROOT / "wasm-decoders" / "build.sh"
    if build_wasm.exists():
        subprocess.run(["bash", str(build_wasm), str(dest / "wasm")], cwd=ROOT, env=tc.env, check=True)
    build_jar(lib_dir / "libpubsubgo.so", dest / "_jars" / "pubsub-go-spark.jar")


def build_jar(lib: Path, out: Path) -> None:
    """The JVM front end's jar (jvm/build.sh), with the library inside, when a
    JDK is here; PUBSUB_GO_JAR=0 skips it, =1 makes a missing JDK an error."""
    want = os.environ.get("PUBSUB_GO_JAR", "")
    if want == "0" or not (ROOT / "jvm" / "build.sh").exists():
        return
    if shutil.which("javac") is None:
        if want == "1":
            raise RuntimeError("PUBSUB_GO_JAR=1 but javac is not on PATH: the jar needs a JDK (11 or later)")
        print("pubsub-go: no javac on PATH, so no JVM jar in this build (docs/jvm.md)", flush=True)
        return
    arch = toolchain.wheel_arch(toolchain.target_goarch())
    subprocess.run(["bash", str(ROOT / "jvm" / "build.sh"), "--lib", str(lib.resolve()), "--out", str(out.resolve()),
                    "--arch", arch],
                   cwd=ROOT, check=True)


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
        def finalize_options(self) -> None:
            super().finalize_options()
            if self.plat_name_supplied:
                return
            # manylinux_2_17_<arch> when zig linked it against glibc 2.17 (always so when
            # cross-compiling); otherwise the default, this machine's linux_<arch>.
            plat = toolchain.select().plat_name
            if plat is not None:
                self.plat_name, self.plat_name_supplied = plat, True

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat  # ABI-mode cffi: any CPython 3, one platform

    cmdclass["bdist_wheel"] = PlatformWheel

setup(cmdclass=cmdclass, distclass=BinaryDistribution)
