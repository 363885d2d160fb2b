#!/usr/bin/env bash
# Set up .venv (first run), lint and type-check, and run every test, the real-engine
# ones included.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
.venv/bin/ruff check --quiet .
.venv/bin/mypy registry
# The PostgreSQL half of the store tests, the browser tests and the llama.cpp engine tests
# fail, not skip, without the server binaries, chromium or the llama-server build.
REGISTRY_REQUIRE_POSTGRES=1 REGISTRY_REQUIRE_BROWSER=1 REGISTRY_REQUIRE_LLAMA_CPP=1 exec .venv/bin/python -m pytest "$@"
