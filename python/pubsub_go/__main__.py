"""Command line: `python -m pubsub_go emulator --port 8085` serves the
embedded emulator; `python -m pubsub_go demo` runs the main job;
`python -m pubsub_go version` says what is installed; `python -m pubsub_go
jar` prints the JVM front end's jar path."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading


def _emulator(args: argparse.Namespace) -> int:
    from .client import Emulator

    emu = Emulator(args.host, args.port)
    print(f"pubsub-go embedded emulator listening on {emu.host_port}", flush=True)
    print(f"export PUBSUB_EMULATOR_HOST={emu.host_port}", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1.0):
        pass
    emu.stop()
    print("emulator stopped", flush=True)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run

    if args.messages < 1:
        print(f"--messages must be at least 1, got {args.messages}", file=sys.stderr)
        return 2
    return run(messages=args.messages, spark=args.spark, jvm=args.jvm)


def _version(args: argparse.Namespace) -> int:
    from . import __version__
    from ._native import library_path
    from .client import version_info

    info = version_info()
    if args.json:
        print(json.dumps({"package": __version__, "library": info}, indent=2))
        return 0
    mods = info.get("modules", {})
    print(f"pubsub-go {__version__}")
    print(f"  library    {info['version']} ({library_path()})")
    print(f"  C ABI      {info['abi']}")
    print(f"  Go         {info['go']} {info['os']}/{info['arch']}")
    for name, label in (("arrow_go", "arrow-go"), ("wazero", "wazero"), ("pubsub", "pubsub"), ("grpc", "grpc")):
        print(f"  {label:<10} {mods.get(name, 'unknown')}")
    if info["version"] != __version__:
        print(f"warning: library {info['version']} does not match package {__version__}", file=sys.stderr)
        return 1
    return 0


def _jar(args: argparse.Namespace) -> int:
    from .jvm import jar_path

    print(jar_path())
    return 0


def main(argv: list[str] | None = None) -> int:
    from .demo import DEFAULT_MESSAGES

    p = argparse.ArgumentParser(prog="python -m pubsub_go", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("emulator", help="serve the embedded Pub/Sub emulator on loopback")
    e.add_argument("--host", default="127.0.0.1")
    e.add_argument("--port", type=int, default=8085)
    e.set_defaults(fn=_emulator)
    d = sub.add_parser("demo", help="embedded emulator -> publish -> read back into Arrow and through Spark")
    d.add_argument("--messages", type=int, default=DEFAULT_MESSAGES,
                   help="how many messages to publish and read back (default: %(default)s)")
    d.add_argument("--spark", action=argparse.BooleanOptionalAction, default=True,
                   help="also read the messages back through spark.readStream.format('pubsub-go')")
    d.add_argument("--jvm", action="store_true",
                   help="read through the JVM front end: the jar on the session, as pubsub_go.configure_spark "
                        "puts it (docs/jvm.md); without it, the Python data source on PySpark 4")
    d.set_defaults(fn=_demo)
    v = sub.add_parser("version", help="package, library, Go, arrow-go, wazero and C ABI versions")
    v.add_argument("--json", action="store_true", help="print the library's build information as JSON")
    v.set_defaults(fn=_version)
    j = sub.add_parser("jar", help="path of the JVM front end's jar (spark-submit --jars, docs/jvm.md)")
    j.set_defaults(fn=_jar)
    args = p.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
