# outreach-elt: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# What setup, test and CI install: exact versions, made by pip-compile from pyproject.toml's ranges (`make upgrade`)
LOCK := requirements.lock
# The installer of the lock: uv, faster than pip; pip only installs uv. --compile-bytecode writes the packages'
# .pyc files at install, as pip does: uv leaves them out by default, and where PYTHONDONTWRITEBYTECODE is set
# every process (each test's `outreach` command, dbt, the Prefect workers) then compiles its imports again.
UV_VERSION := 0.13.9
# Test processes: most tests wait on servers (sandbox, PostgreSQL, Prefect), so 3 keep 2 cores busy.
# One file runs on one worker (loadfile): a file's tests share its servers and ports. Files start in collection
# order (no reorder by test count): tests/conftest.py puts the slowest first.
TEST_WORKERS ?= 3
# `make lint`: ruff (check, format) over the whole tree, tests included; mypy --strict over pyproject's `files`
# (all the Python but tests/). Name folders here to check fewer.
LINT_PATHS :=

.PHONY: setup system-deps lint test demo bench upgrade clean

setup: $(STAMP)

$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet 'uv==$(UV_VERSION)'
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

# New releases within pyproject.toml's ranges into the lock, then the whole suite on them
upgrade: setup
	$(BIN)/pip-compile --quiet --upgrade --extra dev --strip-extras --no-emit-index-url --no-emit-find-links \
		-o $(LOCK) pyproject.toml
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c $(LOCK) -e '.[dev]'
	$(MAKE) test

# PostgreSQL server binaries, Chromium and Node for the tests (apt-get when missing; never skipped)
system-deps:
	devtools/system-deps.sh

# ruff check, ruff format --check, mypy --strict (pyproject.toml); any finding fails the build
lint: setup
	devtools/lint.sh $(LINT_PATHS)

test: setup system-deps lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

demo: setup
	$(BIN)/outreach demo

bench: setup system-deps
	$(BIN)/python -m bench
	$(BIN)/python -m bench --scenario full --scale large

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
