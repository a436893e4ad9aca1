# kafkabatch developer commands. Everything installs into .venv at the repo root.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: install test test-rust test-python stubtest demo bench fuzz-smoke lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Release build of the extension plus test dependencies (editable: python/ is linked).
install: $(PY)
	$(PY) -m pip install --quiet -e '.[test]'

test: install test-rust test-python stubtest

test-rust:
	cargo test --locked

test-python: install
	$(PY) -m pytest -q

stubtest: install
	$(PY) -m mypy.stubtest kafkabatch._kafkabatch --allowlist stubtest-allowlist.txt

demo: install
	$(PY) -m kafkabatch.demo

bench: install
	cargo bench --bench decode
	$(PY) benches/bench_decode.py
	$(PY) benches/bench_sizes.py
	$(PY) benches/bench_memory.py

# Every fuzz target for 60 s (FUZZ_SECONDS to change); needs `cargo install cargo-fuzz`.
fuzz-smoke:
	bash fuzz/smoke.sh

lint:
	cargo clippy --all-targets --features python -- -D warnings
	$(PY) -m mypy python/kafkabatch

clean:
	rm -rf $(VENV) target
