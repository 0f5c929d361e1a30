#!/usr/bin/env bash
# Builds the JVM front end's jar: javac --release 8 against Spark 3.5's API
# (the oldest supported line; the same bytecode runs on Spark 4.x, Scala 2.13,
# since it touches no Scala collection), with libpubsubgo.so inside.
#
#   bash jvm/build.sh --lib path/to/libpubsubgo.so --out path/to/pubsub-go-spark.jar [--arch x86_64|aarch64]
#
# The compile-only jars (Spark's API, Hadoop's client API, Jackson, Scala's
# library) come from Maven Central once into $PUBSUB_GO_JVM_CACHE
# (~/.cache/pubsub-go/jvm); none of them goes into the jar.
set -euo pipefail
LIB="" OUT="" ARCH=$(uname -m)
while [ $# -gt 0 ]; do
  case "$1" in
    --lib) LIB=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    *) echo "jvm/build.sh: unknown argument $1; expected --lib, --out, --arch" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { echo "jvm/build.sh: --out is required" >&2; exit 2; }
OUT=$(realpath -m "$OUT")
[ -z "$LIB" ] || LIB=$(realpath "$LIB")
cd "$(dirname "$0")"
command -v javac >/dev/null || { echo "jvm/build.sh: javac (JDK 11+) is required" >&2; exit 1; }
CP=$(bash classpath.sh compile-classpath.txt)
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
javac --release 8 -Xlint:all,-path,-options -Werror -encoding UTF-8 -cp "$CP" -d "$BUILD" $(find src/main/java -name '*.java')
cp -r src/main/resources/. "$BUILD/"
# The facts both front ends read: the option table and the Go contract it refers to.
mkdir -p "$BUILD/io/pubsubgo"
cp ../python/pubsub_go/_options.json "$BUILD/io/pubsubgo/options.json"
cp ../python/pubsub_go/_contract.json "$BUILD/io/pubsubgo/contract.json"
if [ -n "$LIB" ]; then
  mkdir -p "$BUILD/io/pubsubgo/native/linux-$ARCH"
  cp "$LIB" "$BUILD/io/pubsubgo/native/linux-$ARCH/libpubsubgo.so"
fi
mkdir -p "$(dirname "$OUT")"
jar cf "$OUT" -C "$BUILD" .
echo "jvm/build.sh: $OUT ($(du -h "$OUT" | cut -f1))"
