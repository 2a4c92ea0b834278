#!/usr/bin/env bash
# Lint and type-check: ruff check, ruff format --check and mypy --strict, configured in pyproject.toml.
#   devtools/lint.sh [--fix] [PATH...]
# PATHs are relative to the repository root; none = everything (ruff: the whole tree, mypy: its `files`).
# --fix applies ruff's safe fixes and formats first, then checks. All three checks run even when one fails,
# so one run shows every finding; the exit status is 1 when any found something.
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${VENV_BIN:-.venv/bin}"
if [ ! -x "$bin/ruff" ] || [ ! -x "$bin/mypy" ]; then
  echo "error: ruff or mypy missing from $bin: run \`make setup\` first" >&2
  exit 2
fi

# mypy's cache outside the clone, beside the suite's other caches (devtools/readers.py): a fresh clone (CI) then
# checks only what changed. mypy keys each module's entry by the source's hash, so a stale entry is never used.
cache_root="${OUTREACH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/outreach-elt}"
export MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-$cache_root/mypy}"

fix=0
if [ "${1:-}" = "--fix" ]; then
  fix=1
  shift
fi

if [ "$fix" -eq 1 ]; then
  "$bin/ruff" check --fix --quiet "$@"
  "$bin/ruff" format --quiet "$@"
fi

status=0
echo "ruff check ${*:-.}"
"$bin/ruff" check "$@" || status=1
echo "ruff format --check ${*:-.}"
"$bin/ruff" format --check "$@" || status=1
echo "mypy ${*:-(pyproject files)}"
"$bin/mypy" "$@" || status=1
exit "$status"
