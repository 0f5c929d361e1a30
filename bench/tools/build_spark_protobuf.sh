#!/usr/bin/env bash
# Builds a stand-in for Spark's spark-protobuf_2.13 jar (the from_protobuf
# connector) for the installed PySpark, from Apache Spark's own Scala source.
#
# Only where Maven Central's spark-protobuf is not served (a mirror that 404s
# org.apache.spark:spark-protobuf_2.13); elsewhere spark.jars.packages does it
# and this script is not needed. The Scala source is Apache Spark's, not ours:
# it is read from SRC_DIR and never copied into this repository.
#
#   bench/tools/build_spark_protobuf.sh SRC_DIR [OUT_DIR]
#
# SRC_DIR holds connector/protobuf/src/main/scala of Spark (the tree under it,
# org/apache/spark/sql/protobuf/...) matching the installed PySpark. OUT_DIR
# (default /tmp/spark-protobuf) receives spark-protobuf_2.13-<pyspark>.jar and
# the jars it needs beside Spark's own (protobuf-java, protobuf-java-util,
# unshaded: the real jar shades them, which does not matter for decoding).
# Use it with
#   PUBSUB_GO_SPARK_PROTOBUF="$(ls OUT_DIR/*.jar | paste -sd,)"
# which decode_bench.py and tests/test_protobuf_vs_spark.py pass as spark.jars.
set -euo pipefail

SRC_DIR=${1:?usage: build_spark_protobuf.sh SRC_DIR [OUT_DIR]}
OUT_DIR=${2:-/tmp/spark-protobuf}
PY=${PYTHON:-python3}

PYSPARK_DIR=$("$PY" -c "import pyspark, os; print(os.path.dirname(pyspark.__file__))")
SPARK_VERSION=$("$PY" -c "import pyspark; print(pyspark.__version__)")
JARS="$PYSPARK_DIR/jars"
# The Scala compiler ships in PySpark's own jars; its version is the one Spark
# was built with, so nothing else is downloaded for it.
SCALA_CP=$(ls "$JARS"/scala-compiler-*.jar "$JARS"/scala-library-*.jar "$JARS"/scala-reflect-*.jar | paste -sd:)
# protobuf-java as Spark's pom pins it; -util is for the Any-to-JSON option.
PROTOBUF_VERSION=${PROTOBUF_VERSION:-4.33.5}
M2=${M2_REPO:-$HOME/.m2/repository}/com/google/protobuf
for a in protobuf-java protobuf-java-util; do
  jar="$M2/$a/$PROTOBUF_VERSION/$a-$PROTOBUF_VERSION.jar"
  [ -f "$jar" ] || mvn -q dependency:get -Dartifact="com.google.protobuf:$a:$PROTOBUF_VERSION"
done
PB_JARS="$M2/protobuf-java/$PROTOBUF_VERSION/protobuf-java-$PROTOBUF_VERSION.jar:$M2/protobuf-java-util/$PROTOBUF_VERSION/protobuf-java-util-$PROTOBUF_VERSION.jar"

mapfile -t SOURCES < <(find "$SRC_DIR" -name '*.scala' | sort)
[ ${#SOURCES[@]} -gt 0 ] || { echo "no .scala files under $SRC_DIR" >&2; exit 2; }

BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
java -Xmx1g -cp "$SCALA_CP" scala.tools.nsc.Main -nowarn -d "$BUILD" \
  -classpath "$JARS/*:$PB_JARS" "${SOURCES[@]}"

mkdir -p "$OUT_DIR"
JAR="$OUT_DIR/spark-protobuf_2.13-$SPARK_VERSION.jar"
(cd "$BUILD" && jar cf "$JAR" .)
cp "${PB_JARS%%:*}" "${PB_JARS##*:}" "$OUT_DIR/"
echo "built $JAR"
echo "PUBSUB_GO_SPARK_PROTOBUF=$(ls "$OUT_DIR"/*.jar | paste -sd,)"
