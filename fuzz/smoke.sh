#!/usr/bin/env bash
# Fuzz smoke test: each target for a short time (60 s by default), one after
# the other, from the committed corpus. Exits non-zero on the first crash,
# panic, timeout or OOM; the reproducer lands in fuzz/artifacts/<target>/.
#
#   fuzz/smoke.sh                      # every target, 60 s each
#   FUZZ_SECONDS=600 fuzz/smoke.sh decode iter_headers
#   FUZZ_SANITIZER=address fuzz/smoke.sh decompress_lz4
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a C++ compiler. Works on
# the stable toolchain: RUSTC_BOOTSTRAP=1 unlocks the nightly-only flags
# cargo-fuzz passes (-Zsanitizer, -Cpasses=sancov-module, ...).
#
# The sanitizer defaults to none: debug assertions and overflow checks stay
# on (-a), and throughput is ~15x that of AddressSanitizer, whose cost here is
# mostly its allocator. Use FUZZ_SANITIZER=address to also check the unsafe
# code of the codec crates for memory errors.
#
# New corpus entries go to a scratch directory; the committed corpus is only
# read. One fuzzing process at a time (-workers=1 -jobs=1 would fork one
# worker that logs to ./fuzz-0.log; a single in-process run is equivalent).
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
sanitizer="${FUZZ_SANITIZER:-none}"
all=(decode iter_headers decompress_gzip decompress_snappy decompress_lz4 decompress_zstd encode_roundtrip json_values
  values_json values_avro values_protobuf kmsg tiered)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

export RUSTC_BOOTSTRAP=1
cargo fuzz build -O -a --sanitizer "$sanitizer"   # every target at once

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t" "fuzz/corpus/$t"
  echo "== $t: ${seconds}s, sanitizer $sanitizer"
  rc=0
  cargo fuzz run -O -a --sanitizer "$sanitizer" "$t" "$scratch/$t" "fuzz/corpus/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 \
    >"$scratch/$t.log" 2>&1 || rc=$?
  grep -E "^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)" "$scratch/$t.log" || true
  if [ "$rc" -ne 0 ]; then
    grep -E "panicked|ERROR|SUMMARY|Test unit written|Base64" "$scratch/$t.log" >&2 || tail -40 "$scratch/$t.log" >&2
    echo "!! $t failed (exit $rc); reproducer in fuzz/artifacts/$t/" >&2
    exit 1
  fi
done
echo "fuzz smoke: ${#targets[@]} targets clean"
