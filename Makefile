# outreach-elt: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup system-deps test demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# PostgreSQL server binaries, Chromium and Node for the tests (apt-get when missing; never skipped)
system-deps:
	devtools/system-deps.sh

test: setup system-deps
	$(BIN)/python -m pytest

demo: setup
	$(BIN)/outreach demo

bench: setup system-deps
	$(BIN)/python -m bench
	$(BIN)/python -m bench --scenario full --scale large

clean:
	rm -rf $(VENV) data .pytest_cache
