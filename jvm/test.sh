#!/usr/bin/env bash
# The JVM front end's unit tests (jvm/src/test/java, JUnit 5) in a plain JVM
# against a libpubsubgo.so: the bridge's errors, columns and round trip
# through the embedded emulator, the option table, offsets. Spark's own
# jars for the run come from Maven Central once, as jvm/build.sh's do.
#
#   bash jvm/test.sh --lib path/to/libpubsubgo.so
set -euo pipefail
LIB=""
while [ $# -gt 0 ]; do
  case "$1" in
    --lib) LIB=$(realpath "$2"); shift 2 ;;
    *) echo "jvm/test.sh: unknown argument $1; expected --lib" >&2; exit 2 ;;
  esac
done
[ -n "$LIB" ] || { echo "jvm/test.sh: --lib is required" >&2; exit 2; }
cd "$(dirname "$0")"
CACHE=${PUBSUB_GO_JVM_CACHE:-$HOME/.cache/pubsub-go/jvm}
CP=$(bash classpath.sh compile-classpath.txt test-classpath.txt)
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
javac --release 8 -Xlint:all,-path,-options -Werror -encoding UTF-8 -cp "$CP" -d "$BUILD/main" \
  $(find src/main/java -name '*.java')
cp -r src/main/resources/. "$BUILD/main/"
mkdir -p "$BUILD/main/io/pubsubgo"
cp ../python/pubsub_go/_options.json "$BUILD/main/io/pubsubgo/options.json"
cp ../python/pubsub_go/_contract.json "$BUILD/main/io/pubsubgo/contract.json"
javac --release 8 -Xlint:all,-path,-options -Werror -encoding UTF-8 -cp "$CP:$BUILD/main" -d "$BUILD/test" \
  $(find src/test/java -name '*.java')
java "-Dpubsubgo.library=$LIB" -jar "$CACHE/junit-platform-console-standalone-1.11.3.jar" execute \
  --class-path "$CP:$BUILD/main:$BUILD/test" --scan-class-path "$BUILD/test" --disable-banner \
  --details=tree --fail-if-no-tests
