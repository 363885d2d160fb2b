#!/usr/bin/env bash
# Build a container image holding the cached llama-server (tools/llama_server.sh) and the
# libraries `ldd` lists, by `podman import` of a root filesystem tar (no image registry is
# needed). Idempotent: the tar is cached beside the build; the image is imported when the
# runtime lacks it. Prints `IMAGE@sha256:DIGEST` on stdout.
#   tools/llama_image.sh     build (or reuse) and print the pinned reference
set -euo pipefail
TAG=${LLAMA_IMAGE_TAG:-localhost/registry-llama-server:b11434}
bin=$(PYTHON=${PYTHON:-} "$(dirname "$0")/llama_server.sh")
root=$(dirname "$bin")/..
tar=$root/rootfs.tar
if [ ! -f "$tar" ] || [ "$bin/llama-server" -nt "$tar" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/usr/local/bin" "$tmp/tmp"
  cp "$bin/llama-server" "$tmp/usr/local/bin/"
  # the loader and every library the binary links, at the paths ldd names
  for lib in $(ldd "$bin/llama-server" | grep -o '/[^ ]*'); do
    mkdir -p "$tmp$(dirname "$lib")"
    cp -L "$lib" "$tmp$lib"
  done
  # fixed times and owners: the same build gives the same layer
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$tmp" -cf "$tar.part" .
  mv "$tar.part" "$tar"
  podman rmi -f "$TAG" >/dev/null 2>&1 || true
fi
if ! podman image exists "$TAG"; then
  podman import --quiet --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' "$tar" "$TAG" >/dev/null
fi
echo "$TAG@$(podman image inspect "$TAG" --format '{{.Digest}}')"
