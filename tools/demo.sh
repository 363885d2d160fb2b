#!/usr/bin/env bash
# The main job on embedded defaults: set up .venv (first run), then show what the
# registry does with the bundled recipes.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
R=.venv/bin/registry
$R recipe validate recipes/*.toml
$R recipe show recipes/laguna-s21-b70-exact-short-decode.toml
