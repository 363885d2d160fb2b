#!/usr/bin/env bash
# Set up .venv (first run) and run every test, the real-engine ones included.
# The lab fixtures are read from ../shared/fixtures, or $REGISTRY_FIXTURES.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec .venv/bin/python -m pytest "$@"
