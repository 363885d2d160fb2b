#!/usr/bin/env bash
# Set up .venv (first run) and run every test, the real-engine ones included.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec .venv/bin/python -m pytest "$@"
