# kafkabatch developer commands. Everything installs into .venv at the repo root.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

# BUILD=quick builds the extension and the JNI library without fat LTO (16 codegen units,
# no whole-program link): minutes less of single-threaded compiling, for CI's test and
# lint runs (.ci/run). The default is the release build users get (`make install`).
BUILD ?= release
ifeq ($(BUILD),quick)
export CARGO_PROFILE_RELEASE_LTO := false
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS := 16
else ifneq ($(BUILD),release)
$(error BUILD=$(BUILD): use release (the default) or quick)
endif

# CONSTRAINTS=constraints/lowest.txt installs the lowest supported versions (CI's "lowest" job).
CONSTRAINTS ?=
PIP_CONSTRAINTS := $(if $(CONSTRAINTS),-c $(abspath $(CONSTRAINTS)),)

.PHONY: install extension jvm test test-rust-build test-rust test-python stubtest demo bench fuzz-smoke lint check-sdist clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Release build of the extension plus test dependencies (editable: python/ is linked),
# and the JVM data source's jar where a JDK is installed.
install: extension
	@if command -v javac >/dev/null 2>&1; then $(MAKE) --no-print-directory jvm; \
	else echo "make install: no javac on PATH, the JVM data source's jar is not built (make jvm)"; fi

# The extension and the test dependencies alone: what stubtest and lint need (no jar).
extension: $(PY)
	$(PY) -m pip install --quiet $(PIP_CONSTRAINTS) -e '.[test]'

# The JVM data source: the JNI library, the Java classes (against PySpark's jars) and
# python/kafkabatch/spark/jars/kafkabatch-spark.jar holding both.
jvm: $(PY)
	PY=$(abspath $(PY)) CARGO_FLAGS=--locked bash scripts/build_jvm.sh

# The Rust tests' debug build runs beside the release install: on two cores each spends
# minutes in a single-threaded step (codegen with one unit, fat LTO), so together they take
# little more than the install alone.
# The second make runs the suites on that install (KAFKABATCH_INSTALLED=1: no second pip install and jar build).
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target install test-rust-build
	$(MAKE) --no-print-directory test-rust test-python stubtest KAFKABATCH_INSTALLED=1

test-rust-build:
	cargo test --locked --no-run

test-rust:
	cargo test --locked

# PYTEST_WORKERS=0 runs the suite in one process. --dist loadfile keeps a file on one worker, so
# one slow file bounds the wall time; --durations=25 lists the slowest tests in every log.
PYTEST_WORKERS ?= 2

test-python: $(if $(KAFKABATCH_INSTALLED),,install)
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=25

stubtest: $(if $(KAFKABATCH_INSTALLED),,extension)
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

# Formatting, lints and types; CI runs it as its own job.
lint: extension
	cargo fmt --all --check
	cargo clippy --locked --workspace --all-targets -- -D warnings
	# the core as the fuzz targets build it (no remote storage)
	cargo clippy --locked -p kafkabatch --no-default-features --lib -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --workspace
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy python/kafkabatch
	$(PY) scripts/check_imports.py
	$(PY) -m mypy.stubtest kafkabatch._kafkabatch --allowlist stubtest-allowlist.txt

# The sdist must hold everything `cargo test` needs: build it, unpack it, test it.
check-sdist: $(PY)
	$(PY) -m pip install --quiet 'maturin>=1.9,<2'
	PY=$(abspath $(PY)) bash scripts/check_sdist.sh

clean:
	rm -rf $(VENV) target
