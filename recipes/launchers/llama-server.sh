#!/usr/bin/env bash
# Start llama-server the lab's way: every setting from the environment with a default,
# validated; the settings printed as key=value lines, then the server's --version, then
# `--- server ---`, then exec. The registry runs it as an argv: this script's own
# arguments come first, then `--`, then the engine's command line (binary and arguments),
# to which the settings below are added.
#   CTX_SIZE      context cells (default 4096)
#   THREADS       CPU threads (default 1)
#   CACHE_TYPE_K  K cache type (default f16)
#   CACHE_TYPE_V  V cache type (default f16)
#   EXTRA_LLAMA_ARGS  further options, split on spaces (default none)
set -euo pipefail

CTX_SIZE=${CTX_SIZE:-4096}
THREADS=${THREADS:-1}
CACHE_TYPE_K=${CACHE_TYPE_K:-f16}
CACHE_TYPE_V=${CACHE_TYPE_V:-f16}
EXTRA_LLAMA_ARGS=${EXTRA_LLAMA_ARGS:-}

fail() { echo "launcher: $*" >&2; exit 2; }
[[ $CTX_SIZE =~ ^[1-9][0-9]*$ ]] || fail "CTX_SIZE=$CTX_SIZE is not a positive integer"
[[ $THREADS =~ ^[1-9][0-9]*$ ]] || fail "THREADS=$THREADS is not a positive integer"
for t in "$CACHE_TYPE_K" "$CACHE_TYPE_V"; do
  case $t in f32|f16|bf16|q8_0|q4_0|q4_1|iq4_nl|q5_0|q5_1) ;; *) fail "cache type $t is unknown";; esac
done
[[ $EXTRA_LLAMA_ARGS =~ ^[A-Za-z0-9\ ._=-]*$ ]] || fail "EXTRA_LLAMA_ARGS holds characters outside [A-Za-z0-9 ._=-]"

# our own arguments end at `--`; what follows is the engine's command line
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in --label=*) echo "label=${1#--label=}";; *) fail "unknown argument $1";; esac
  shift
done
[ "${1:-}" = "--" ] || fail "no engine command after --"
shift
[ $# -gt 0 ] && [ -x "$1" ] || fail "the engine command ${1:-(none)} is not executable"

echo "ctx_size=$CTX_SIZE"
echo "threads=$THREADS"
echo "cache_type_k=$CACHE_TYPE_K"
echo "cache_type_v=$CACHE_TYPE_V"
echo "extra_llama_args=$EXTRA_LLAMA_ARGS"
"$1" --version 2>&1 || true
echo "--- server ---"
# shellcheck disable=SC2086  # EXTRA_LLAMA_ARGS is validated above and split on purpose
exec "$@" --ctx-size "$CTX_SIZE" --threads "$THREADS" \
  --cache-type-k "$CACHE_TYPE_K" --cache-type-v "$CACHE_TYPE_V" $EXTRA_LLAMA_ARGS
