"""Checks a built pubsub-go wheel: what a user's machine will need to load it.

  * the platform tag names the architecture the library is built for
    (ELF machine), and a manylinux_X_Y tag is not older than the newest
    glibc symbol version the library uses;
  * the library links nothing but glibc's own libraries (libc and its
    usual companions), so it loads anywhere that glibc does;
  * the built-in WASM decoders, the header cffi reads and the module that
    registers the Spark data source are inside;
  * no test hook is in it: the library exports no pg_debug_* symbol and
    the header declares none (they exist only in a library built with
    `-tags pubsubgo_debug`, go/include/pubsubgo_debug.h).

Usage: python scripts/check_wheel.py WHEEL...  (exit 1 naming each problem).
Reads ELF with binutils' readelf, which handles every architecture.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LIBRARY = "pubsub_go/_lib/libpubsubgo.so"
HEADER = "pubsub_go/_lib/pubsubgo.h"
# The Python<->Go contract (go/cmd/contract): options are validated against it.
CONTRACT = "pubsub_go/_contract.json"
# The option table both front ends read (pubsub_go/spark/option_table.py).
OPTION_TABLE = "pubsub_go/_options.json"
DECODERS = ("pubsub_go/wasm/json.wasm", "pubsub_go/wasm/avro.wasm")
# The JVM front end's jar (docs/jvm.md), with the library of the wheel's architecture inside.
JAR = "pubsub_go/_jars/pubsub-go-spark.jar"
JAR_LIBRARY = "io/pubsubgo/native/linux-{arch}/libpubsubgo.so"
# The top-level module through which PySpark registers format("pubsub-go") by itself.
AUTO_REGISTER = "pyspark_pubsub_go.py"
WASM_MAGIC = b"\0asm"
# The prefix of the test hooks, which only a -tags pubsubgo_debug build exports.
DEBUG_PREFIX = "pg_debug_"

# glibc's own shared objects: a library that needs only these loads on any
# glibc system of the tagged version (PEP 600 / auditwheel's policy for them).
GLIBC_LIBS = {
    "libc.so.6", "libpthread.so.0", "libdl.so.2", "libm.so.6", "librt.so.1", "libresolv.so.2",
    "libutil.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1",
}
# Wheel architecture -> what readelf prints as the ELF machine.
MACHINES = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}


def _readelf(args: list[str], path: Path) -> str:
    out = subprocess.run(["readelf", "--wide", *args, str(path)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"readelf {' '.join(args)} {path} failed: {out.stderr.strip()}")
    return out.stdout


def _defined_symbols(path: Path) -> str:
    """The names of the symbols the library defines in its dynamic symbol table, one a line."""
    rows = (line.split() for line in _readelf(["--dyn-syms"], path).splitlines())
    return "\n".join(r[7] for r in rows if len(r) >= 8 and r[0].endswith(":") and r[6] != "UND")


def platform_tag(wheel: Path) -> str:
    # name-version-pythontag-abitag-platformtag.whl
    parts = wheel.name[: -len(".whl")].split("-")
    if len(parts) < 5:
        raise ValueError(f"{wheel.name} is not a wheel file name")
    return parts[-1]


def check(wheel: Path) -> tuple[list[str], dict]:
    """Returns (problems, facts) for one wheel."""
    problems: list[str] = []
    tag = platform_tag(wheel)
    arch = next((a for a in MACHINES if tag.endswith("_" + a)), None)
    facts: dict = {"wheel": wheel.name, "tag": tag, "size": wheel.stat().st_size}
    if arch is None:
        problems.append(f"platform tag {tag!r} names no supported architecture ({', '.join(MACHINES)})")
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as tmp:
        names = set(z.namelist())
        for want in (LIBRARY, HEADER, CONTRACT, OPTION_TABLE, *DECODERS, AUTO_REGISTER):
            if want not in names:
                problems.append(f"{want} is missing from the wheel")
        if JAR not in names:
            problems.append(f"{JAR} is missing from the wheel (built by jvm/build.sh when javac is on PATH)")
        elif arch is not None:
            jar = Path(tmp) / "front.jar"
            jar.write_bytes(z.read(JAR))
            with zipfile.ZipFile(jar) as j:
                if JAR_LIBRARY.format(arch=arch) not in j.namelist():
                    problems.append(f"{JAR} lacks {JAR_LIBRARY.format(arch=arch)}")
        for dec in DECODERS:
            if dec in names and not z.read(dec).startswith(WASM_MAGIC):
                problems.append(f"{dec} is not a WebAssembly module (no \\0asm header)")
        if HEADER in names and DEBUG_PREFIX.encode() in z.read(HEADER):
            problems.append(f"{HEADER} declares test hooks ({DEBUG_PREFIX}*): they belong in pubsubgo_debug.h")
        if LIBRARY not in names:
            return problems, facts
        lib = Path(tmp) / "lib.so"
        lib.write_bytes(z.read(LIBRARY))
        facts["library_size"] = lib.stat().st_size
        machine = re.search(r"Machine:\s+(.+)", _readelf(["-h"], lib))
        facts["machine"] = machine.group(1).strip() if machine else "?"
        if arch is not None and facts["machine"] != MACHINES[arch]:
            problems.append(f"the library is built for {facts['machine']!r} but the wheel is tagged {tag}")
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _readelf(["-d"], lib))
        facts["needed"] = needed
        extra = [n for n in needed if n not in GLIBC_LIBS]
        if extra:
            problems.append(f"the library needs shared libraries outside glibc: {', '.join(extra)} "
                            f"(allowed: {', '.join(sorted(GLIBC_LIBS))})")
        hooks = sorted({m for m in re.findall(r"(\S*" + DEBUG_PREFIX + r"\w*)", _defined_symbols(lib))})
        if hooks:
            problems.append(f"the library exports test hooks: {', '.join(hooks)} (a -tags pubsubgo_debug build; "
                            "the release library is built without it)")
        versions = {tuple(int(x) for x in v.split(".")) for v in
                    re.findall(r"GLIBC_(\d+(?:\.\d+)+)", _readelf(["-V"], lib))}
        newest = max(versions) if versions else (0,)
        facts["newest_glibc"] = ".".join(map(str, newest))
        m = re.match(r"manylinux_(\d+)_(\d+)_", tag)
        if m and newest > (int(m.group(1)), int(m.group(2))):
            problems.append(f"the library uses glibc {facts['newest_glibc']} symbols but the wheel is tagged {tag}")
    return problems, facts


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    failed = False
    for arg in argv:
        problems, facts = check(Path(arg))
        print(f"{facts['wheel']}: {facts['size'] / 2**20:.1f} MiB wheel, "
              f"{facts.get('library_size', 0) / 2**20:.1f} MiB library, {facts.get('machine', '?')}, "
              f"needs {', '.join(facts.get('needed', [])) or '-'}, glibc symbols <= {facts.get('newest_glibc', '?')}")
        for p in problems:
            print(f"  FAIL: {p}", file=sys.stderr)
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
