# outreach-elt: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make lint`: ruff (check, format) over the whole tree, tests included; mypy --strict over pyproject's `files`
# (all the Python but tests/). Name folders here to check fewer.
LINT_PATHS :=

.PHONY: setup system-deps lint test demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# PostgreSQL server binaries, Chromium and Node for the tests (apt-get when missing; never skipped)
system-deps:
	devtools/system-deps.sh

# ruff check, ruff format --check, mypy --strict (pyproject.toml); any finding fails the build
lint: setup
	devtools/lint.sh $(LINT_PATHS)

test: setup system-deps lint
	$(BIN)/python -m pytest

demo: setup
	$(BIN)/outreach demo

bench: setup system-deps
	$(BIN)/python -m bench
	$(BIN)/python -m bench --scenario full --scale large

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
