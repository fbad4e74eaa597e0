# Every target here is what CI and the README run; `make help` lists them.
VENV ?= .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

LOG := $(VENV)/setup.log
# One progress line per step; the tools' own output goes to $(LOG), printed only on failure.
QUIET = >>$(LOG) 2>&1 || { tail -n 40 $(LOG); echo "failed; full log: $(LOG)"; exit 1; }

.PHONY: help setup setup-core native-client build demo test test-rust test-python test-slow lint fmt bench clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

$(PY):
	@echo "[setup] virtual environment in $(VENV)"
	@python3 -m venv $(VENV)
	@echo "[setup] pip and maturin"
	@$(PY) -m pip install -q --upgrade pip 'maturin>=1.7,<2' $(QUIET)

setup: $(PY)  ## virtual environment, every dependency (dev, scale, voyage), native module (release)
	@echo "[setup] native module and dependencies with the dev,scale,voyage extras (release build)"
	@$(VENV)/bin/maturin develop -q --release --extras dev,scale,voyage $(QUIET)
	@$(MAKE) -s native-client

setup-core: $(PY)  ## virtual environment, core dependencies only, native module (release)
	@echo "[setup] native module and core dependencies (release build; a few minutes once)"
	@$(VENV)/bin/maturin develop -q --release $(QUIET)
	@$(MAKE) -s native-client

# The native `maguyva` command (rust/client, issue 21) replaces the console script maturin
# installed; it execs this environment's Python CLI for all it does not answer itself.
native-client: $(PY)  ## build and install the native `maguyva` client (part of setup)
	@echo "[setup] native client (rust/client) as $(VENV)/bin/maguyva"
	@cargo build -q --release -p maguyva-client $(QUIET)
	@$(PY) -m maguyva.interfaces.native $${CARGO_TARGET_DIR:-target}/release/maguyva $(QUIET)

build: setup  ## alias of setup

demo: setup-core  ## index a real repository and answer one query of each intent
	@echo "[demo] indexing requests 2.32.3 and asking one question of each intent"
	@$(PY) -m maguyva.interfaces.demo

test-rust:  ## Rust unit tests of the core (no Python); then the binding layer's own (its zstd frames and built-in dictionaries; tests/ drives the rest from Python)
	cargo test -q
	cargo test -q --features python --lib py::

test-python: setup  ## Python tests (default run, slow scale tests excluded)
	$(PY) -m pytest -q -m "not slow"

test: setup lint test-rust test-python  ## everything CI runs

test-slow: setup  ## the slow scale tests
	$(PY) -m pytest -q -m slow

lint: setup  ## ruff, mypy (the public surface), stubtest (_core.pyi), rustfmt, clippy
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches
	$(PY) -m mypy
	$(PY) -m mypy.stubtest maguyva._core
	cargo fmt --check
	cargo clippy -q --all-targets -- -D warnings
	cargo clippy -q --all-targets --features python -- -D warnings

fmt:  ## format Rust and Python
	cargo fmt
	$(VENV)/bin/ruff format python tests benches
	$(VENV)/bin/ruff check --fix python tests benches

bench: setup  ## benchmarks side by side with the peers, then the Rust kernels (Criterion)
	$(PY) -m pytest benches -q -o python_files="bench_*.py" --benchmark-only --benchmark-columns=min,median,max,ops
	cargo bench --bench kernels

clean:
	rm -rf $(VENV) target .maguyva
