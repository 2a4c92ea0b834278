#!/usr/bin/env bash
# System packages the tests need beside .venv: PostgreSQL's server binaries (portability and
# shared-warehouse tests) and Chromium (the dashboard's browser test). Installs what is missing
# with apt-get, or fails naming what to install; never skips. Idempotent and quick when present.
set -euo pipefail

need=()
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
command -v chromium >/dev/null || need+=(chromium)
command -v node >/dev/null || need+=(nodejs npm)

[ ${#need[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "error: the tests need ${need[*]}; install them with your package manager" >&2
  exit 1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing system packages: ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
