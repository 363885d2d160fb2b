#!/usr/bin/env bash
# The main job on embedded defaults, on the real vLLM CPU engine: two tiny lanes run
# and sealed, compared, one reproduced, everything verified. Everything it writes is
# under .registry-demo/ (models are kept between runs; the home, keys and runs are
# made fresh), so it never touches your own registry home or signing keys.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Set up .venv with the vLLM CPU build (first run: a few minutes)"
# the demo runs vLLM only: llama-server (built for the tests) is not built here
REGISTRY_SKIP_LLAMA_CPP=1 tools/setup.sh
PY=$PWD/.venv/bin/python
R=$PWD/.venv/bin/registry
DEMO=$PWD/.registry-demo
MODELS=$DEMO/models

step "Build the tiny checkpoints into $MODELS (reused when present)"
"$PY" tools/tiny_checkpoint.py --out "$MODELS" tiny-llama tiny-llama-kv-fp8

step "A fresh demo home and signing key, both inside $DEMO"
rm -rf "$DEMO/.registry" "$DEMO/keys" "$DEMO/runs"
export REGISTRY_KEYS_DIR=$DEMO/keys REGISTRY_HOME=$DEMO/.registry
export REGISTRY_HASH_CACHE=$DEMO/hashes.sqlite
unset REGISTRY_DATABASE_URL
"$R" keys init
"$R" init "$DEMO"
latest() { "$R" list --limit 1 --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])'; }

step "Run and seal the BF16-KV lane (explicit --kv-cache-dtype bfloat16)"
"$R" run recipes/tiny-bf16-kv.toml --models "$MODELS" --out "$DEMO/runs/bf16"
BF16=$(latest)

step "Run and seal the checkpoint-FP8-KV lane (the engine says kv_cache_dtype=auto)"
"$R" run recipes/tiny-checkpoint-kv.toml --models "$MODELS" --out "$DEMO/runs/checkpoint-fp8"
FP8=$(latest)

step "Diff them: the log says auto, the checkpoint and the KV capacity prove fp8_e4m3"
"$R" diff "$BF16" "$FP8"

step "Make the BF16 record the teacher of its lane"
"$R" teacher set "$BF16" --lane tiny-bf16-exact

step "Reproduce the BF16 record: identity, bitwise outputs, speed"
verdict=0
# The default 0.95 floor: the speed verdict compares 95% intervals and runs more rounds
# of the suite while it is undecided (docs/reproduce.md).
"$R" reproduce "$BF16" --models "$MODELS" --out "$DEMO/runs/bf16-again" || verdict=$?
[ "$verdict" = 0 ] || echo "reproduce exited $verdict (see the verdicts above)"

step "Verify every record: artifacts, signatures, ledger"
"$R" verify --all

step "The records"
"$R" list
