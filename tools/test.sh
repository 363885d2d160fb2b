#!/usr/bin/env bash
# Set up .venv (first run), lint and type-check, and run every test, the real-engine
# ones included.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
.venv/bin/ruff check --quiet .
.venv/bin/mypy registry
# The PostgreSQL half of the store tests fails, not skips, without the server binaries.
REGISTRY_REQUIRE_POSTGRES=1 exec .venv/bin/python -m pytest "$@"
