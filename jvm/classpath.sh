#!/usr/bin/env bash
# Prints the classpath of the jars the given lists name (Maven Central
# paths, one per line), fetching each once into $PUBSUB_GO_JVM_CACHE
# (~/.cache/pubsub-go/jvm). Shared by jvm/build.sh and jvm/test.sh.
#
#   CP=$(bash jvm/classpath.sh jvm/compile-classpath.txt [more lists])
set -euo pipefail
CACHE=${PUBSUB_GO_JVM_CACHE:-$HOME/.cache/pubsub-go/jvm}
REPO=${MAVEN_REPO_URL:-https://repo1.maven.org/maven2}
mkdir -p "$CACHE"
CP=""
while read -r path; do
  [ -n "$path" ] || continue
  f="$CACHE/$(basename "$path")"
  if [ ! -s "$f" ]; then
    curl -sfSL --retry 3 -o "$f.part" "$REPO/$path" || { echo "jvm/classpath.sh: cannot fetch $REPO/$path" >&2; exit 1; }
    mv "$f.part" "$f"
  fi
  CP="$CP:$f"
done < <(cat "$@")
echo "${CP#:}"
