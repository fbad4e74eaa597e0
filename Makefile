# Every target here is what CI and the README run; `make help` lists them.
VENV ?= .venv
PY := $(VENV)/bin/python
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: help setup build demo test test-rust test-python test-slow lint fmt bench clean

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*##/\t/'

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip 'maturin>=1.7,<2'

setup: $(PY)  ## virtual environment, dependencies, native module (release build)
	$(VENV)/bin/maturin develop -q --release --extras dev,scale,voyage

build: setup  ## alias of setup

demo: setup  ## index a real repository and answer one query of each intent
	$(PY) -m maguyva.interfaces.demo

test-rust:  ## Rust unit tests (the core without Python, then the binding layer's own tests)
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
