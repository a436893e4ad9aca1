#!/usr/bin/env bash
# Builds the JVM Spark source (`make jvm`): the JNI library (bindings/jni), the Java classes (java/,
# compiled with the JDK alone against the jars PySpark ships) and one jar holding both, written to
# python/kafkabatch/spark/jars/kafkabatch-spark.jar (kafkabatch.spark.jar_path() finds it there).
#
#   PY=.venv/bin/python       the Python whose PySpark jars are the classpath (or SPARK_JARS=dir)
#   CARGO_FLAGS=--locked      extra flags for cargo build
#   NATIVE=0                  the Java classes only, no JNI library (the release workflow adds
#                             each platform's library with scripts/jar_add_native.py)
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PY:-.venv/bin/python}
if [ -z "${SPARK_JARS:-}" ]; then
  SPARK_JARS=$("$PY" -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
fi
if [ ! -d "$SPARK_JARS" ]; then
  echo "build_jvm.sh: no Spark jars at $SPARK_JARS (pip install pyspark, or set SPARK_JARS)" >&2
  exit 1
fi

# <os>-<arch> as NativeLoader.platform() names it.
case "$(uname -s)" in
  Linux) os=linux; lib=libkafkabatch_jni.so ;;
  Darwin) os=darwin; lib=libkafkabatch_jni.dylib ;;
  MINGW* | MSYS* | CYGWIN*) os=windows; lib=kafkabatch_jni.dll ;;
  *) echo "build_jvm.sh: unknown OS $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) arch=$(uname -m) ;;
esac

if [ "${NATIVE:-1}" != 0 ]; then
  # shellcheck disable=SC2086  # CARGO_FLAGS is a list of flags
  cargo build ${CARGO_FLAGS:-} --release -p kafkabatch-jni
  target_dir=$(cargo metadata --format-version 1 --no-deps | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
fi

out=target/java
rm -rf "$out"
mkdir -p "$out/classes/io/github/kafkabatch/native/$os-$arch"
# Every lint but two about PySpark's jars, not our code: `path` (their manifests' Class-Path name jars
# PySpark does not ship) and `classfile` (Arrow's classes carry checker-framework annotations it does not ship).
# shellcheck disable=SC2046  # one argument per source file
javac --release 17 -Xlint:all,-path,-classfile -Werror -encoding UTF-8 -cp "$SPARK_JARS/*" -d "$out/classes" \
  $(find java/src/main/java -name '*.java' | sort)
cp -R java/src/main/resources/. "$out/classes/"
if [ "${NATIVE:-1}" != 0 ]; then
  cp "$target_dir/release/$lib" "$out/classes/io/github/kafkabatch/native/$os-$arch/"
  # its SHA-256 beside it: NativeLoader names the extracted copy by it without hashing the library each session
  "$PY" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' \
    "$target_dir/release/$lib" > "$out/classes/io/github/kafkabatch/native/$os-$arch/$lib.sha256"
else
  rmdir "$out/classes/io/github/kafkabatch/native/$os-$arch" "$out/classes/io/github/kafkabatch/native"
fi

jar_dir=python/kafkabatch/spark/jars
mkdir -p "$jar_dir"
jar --create --file "$jar_dir/kafkabatch-spark.jar.part" -C "$out/classes" .
mv "$jar_dir/kafkabatch-spark.jar.part" "$jar_dir/kafkabatch-spark.jar"
if [ "${NATIVE:-1}" != 0 ]; then
  echo "build_jvm.sh: wrote $jar_dir/kafkabatch-spark.jar ($os-$arch)"
else
  echo "build_jvm.sh: wrote $jar_dir/kafkabatch-spark.jar (Java classes only, NATIVE=0)"
fi
