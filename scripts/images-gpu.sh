#!/usr/bin/env bash
# Builds the GPU images, loraloop/trainer and loraloop/vllm, from the local Debian base (`make images`) and PyPI's
# wheels at constraints/gpu.txt's pins: no registry pull. Each runs its smoke test as its last build step
# (scripts/gpu_image_check.py: imports at the lock's versions, --help of its commands, unsloth's guard without a GPU);
# `make images-gpu-check` (this script's `check`) runs it again in the built images. Prints each build's time and
# image size. `make test` builds neither. BASE=<image> builds on another base (any with python3 and pip).
set -euo pipefail
cd "$(dirname "$0")/.."
TAG=${LORALOOP_TAG:-$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)}
BASE=${BASE:-debian:bookworm-slim}
if [ "${1:-}" = check ]; then
  docker run --rm "loraloop/trainer:$TAG" python /opt/loraloop/gpu_image_check.py trainer
  docker run --rm --entrypoint python "loraloop/vllm:$TAG" /opt/loraloop/gpu_image_check.py vllm
  exit 0
fi
for image in trainer vllm; do
  started=$(date +%s)
  docker build --network host -q --build-arg BASE="$BASE" -t "loraloop/$image:$TAG" -f "images/$image/Dockerfile" . >/dev/null
  size=$(docker image inspect "loraloop/$image:$TAG" --format '{{.Size}}')
  echo "images-gpu: loraloop/$image:$TAG built in $(( $(date +%s) - started )) s, $(( size / 1000000 )) MB"
done
