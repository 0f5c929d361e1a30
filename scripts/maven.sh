#!/usr/bin/env bash
# The JVM front end as a Maven artifact, for Scala and Java users (docs/jvm.md,
# "As a Maven artifact"): from the two manylinux wheels in DIST (scripts/wheels.sh
# builds them), one jar holding both architectures' library, its pom and a
# sources jar, in a Maven-layout repository at OUT (default DIST/maven):
#
#   OUT/io/github/pubsub-go/pubsub-go-spark/maven-metadata.xml
#   OUT/io/github/pubsub-go/pubsub-go-spark/V/pubsub-go-spark-V{.jar,.pom,-sources.jar}  (+ .sha1, .md5)
#
# One artifact, no Scala suffix: the jar is Java 8 bytecode that touches no Scala
# collection, so it serves Spark 3.5 (Scala 2.12) and 4.x (Scala 2.13) alike. It
# depends on nothing but Spark, which is `provided`: no copy of Spark's own
# dependencies inside. Use it with
#   spark-submit --packages io.github.pubsub-go:pubsub-go-spark:V --repositories file://OUT
# (once published, --packages alone). Needs only Python.
#
#   bash scripts/maven.sh DIST [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
DIST=${1:?usage: scripts/maven.sh DIST [OUT]}
OUT=${2:-$DIST/maven}
python3 - "$DIST" "$OUT" <<'EOF'
import hashlib
import io
import sys
import zipfile
from pathlib import Path

dist, out = Path(sys.argv[1]), Path(sys.argv[2])
GROUP, ARTIFACT = "io.github.pubsub-go", "pubsub-go-spark"
JAR = "pubsub_go/_jars/pubsub-go-spark.jar"
wheels = {arch: next(dist.glob(f"pubsub_go-*-py3-none-manylinux_2_17_{arch}.whl")) for arch in ("x86_64", "aarch64")}
version = wheels["x86_64"].name.split("-")[1]
jars = {}
for arch, whl in wheels.items():
    with zipfile.ZipFile(whl) as w:
        if JAR not in w.namelist():
            sys.exit(f"scripts/maven.sh: {whl.name} holds no {JAR} (built without javac?)")
        jars[arch] = w.read(JAR)

d = out / GROUP.replace(".", "/") / ARTIFACT / version
d.mkdir(parents=True, exist_ok=True)
stem = f"{ARTIFACT}-{version}"  # (not Path.with_suffix: the version has dots)


def write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.with_name(path.name + ".sha1").write_text(hashlib.sha1(data).hexdigest())
    path.with_name(path.name + ".md5").write_text(hashlib.md5(data).hexdigest())


# The x86_64 wheel's jar, plus the aarch64 wheel's library: the classes are the same build.
tmp = d / f"{stem}.jar.part"
with zipfile.ZipFile(io.BytesIO(jars["x86_64"])) as x, zipfile.ZipFile(io.BytesIO(jars["aarch64"])) as a:
    arm_lib = "io/pubsubgo/native/linux-aarch64/libpubsubgo.so"
    assert arm_lib in a.namelist() and "io/pubsubgo/native/linux-x86_64/libpubsubgo.so" in x.namelist()
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as j:
        for info in x.infolist():
            j.writestr(info, x.read(info))
        j.writestr(a.getinfo(arm_lib), a.read(arm_lib))
write(d / f"{stem}.jar", tmp.read_bytes())
tmp.unlink()

src = Path("jvm/src/main/java")
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as s:
    for f in sorted(src.rglob("*.java")):
        s.write(f, f.relative_to(src).as_posix())
write(d / f"{stem}-sources.jar", buf.getvalue())

pom = f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>{GROUP}</groupId>
  <artifactId>{ARTIFACT}</artifactId>
  <version>{version}</version>
  <packaging>jar</packaging>
  <name>pubsub-go Spark connector</name>
  <description>Google Cloud Pub/Sub source and sink for Apache Spark 3.5 and 4.x (DataSource V2,
    format("pubsub-go")), over a Go data plane loaded through JNI (Linux x86_64 and aarch64 inside).
    Java 8 bytecode; one artifact for Scala 2.12 and 2.13.</description>
  <url>https://github.com/pubsub-go/pubsub-go</url>
  <licenses>
    <license><name>Apache License, Version 2.0</name><url>https://www.apache.org/licenses/LICENSE-2.0</url></license>
  </licenses>
  <properties>
    <maven.compiler.source>1.8</maven.compiler.source>
    <maven.compiler.target>1.8</maven.compiler.target>
  </properties>
  <dependencies>
    <!-- Spark's own (and through it Hadoop's and Jackson's): the cluster's, never shaded in.
         Compiled against 3.5's API; the same bytecode runs on 4.x (Scala 2.13). -->
    <dependency>
      <groupId>org.apache.spark</groupId>
      <artifactId>spark-sql_2.12</artifactId>
      <version>3.5.7</version>
      <scope>provided</scope>
    </dependency>
  </dependencies>
</project>
"""
write(d / f"{stem}.pom", pom.encode())
meta = f"""<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>{GROUP}</groupId>
  <artifactId>{ARTIFACT}</artifactId>
  <versioning>
    <latest>{version}</latest>
    <release>{version}</release>
    <versions><version>{version}</version></versions>
  </versioning>
</metadata>
"""
write(d.parent / "maven-metadata.xml", meta.encode())
print(f"   maven: {GROUP}:{ARTIFACT}:{version} in {out} (jar {(d / (stem + '.jar')).stat().st_size / 1048576:.1f} MiB,"
      " x86_64 and aarch64 libraries)")
EOF
