#!/usr/bin/env bash
# Build the sdist, unpack it in a scratch folder and run `cargo test` there:
# a release must build and pass its Rust tests from the sdist alone
# (src/fuzz_regressions.rs includes files from fuzz/, which cargo's own
# packaging leaves out; pyproject.toml's [tool.maturin] include adds them).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$PY" -m maturin sdist --out "$scratch/dist"
tar -xzf "$scratch"/dist/kafkabatch-*.tar.gz -C "$scratch"
cd "$scratch"/kafkabatch-*/
# maturin drops the workspace members the extension does not need (bindings/jni) from the sdist's
# Cargo.toml but copies Cargo.lock as it is (PyO3/maturin#2609): drop their packages from the lock
# (offline; no other pin changes), so `--locked` below still checks every remaining pin.
cargo update --workspace --offline --quiet
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$scratch/target} cargo test --locked
