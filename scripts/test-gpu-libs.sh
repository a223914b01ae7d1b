#!/usr/bin/env bash
# The trainer's CPU-runnable tests again, under the GPU images' releases of the training libraries
# (constraints/gpu.txt): unsloth caps trl and transformers below constraints/main.txt's, so the trainer image runs
# other releases of them than `make test` does. .venv-gpu-libs holds only those releases (and the needs of theirs
# that .venv's releases do not meet); everything else (torch, loraloop, the test tools) comes from .venv through a
# site dir appended after its own (a .pth file), so nothing is installed twice and .venv is never touched.
# What runs here: the RL batching, the off-policy correction and its metrics, the configs and --backend. What cannot:
# TRL 1.15's trainers (SFT, DPO, GRPO) and its fused LM head compute logprobs with Triton kernels (trl/kernels,
# imported only where Triton is), which a CPU torch does not have, so every training step under these releases
# fails on a CPU ('NoneType' object has no attribute 'apply'); TRL 1.16 computes them in PyTorch. Under the lock,
# BC and RL steps ran on an H100 instead (bench/gpu.py, bench/results/gpu.md); DPO and GRPO have not.
#   make test-gpu-libs                 the tests above
#   make test-gpu-libs ARGS=-k batch   pytest's arguments
set -euo pipefail
cd "$(dirname "$0")/.."
LIBS=(trl transformers peft datasets accelerate)
venv=.venv-gpu-libs
pins=$(for lib in "${LIBS[@]}"; do grep -i "^${lib}==" constraints/gpu.txt || { echo "constraints/gpu.txt has no $lib pin" >&2; exit 1; }; done)
stamp=$(printf '%s\n' "$pins" | sha256sum | cut -c1-16)
if [ "$(cat $venv/.loraloop-stamp 2>/dev/null)" != "$stamp" ]; then
  echo "[test-gpu-libs] $venv: $(echo $pins)"
  rm -rf $venv
  .venv/bin/python -m venv $venv
  main_site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  own_site=$($venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "import site; site.addsitedir('$main_site')" > "$own_site/zz-loraloop-main.pth"
  # --no-deps, so that pip never touches .venv: the libraries at the lock's releases, then each need of theirs that
  # .venv's release does not meet (transformers 5.17 wants huggingface_hub below 2), until none is left
  for _ in 1 2 3 4; do
    unmet=$($venv/bin/python scripts/unmet_needs.py constraints/gpu.txt "${LIBS[@]}")
    [ -z "$unmet" ] && break
    echo "[test-gpu-libs] at the lock's releases: $unmet"
    $venv/bin/pip install -q --no-deps $unmet
  done
  echo "$stamp" > $venv/.loraloop-stamp
fi
unmet=$($venv/bin/python scripts/unmet_needs.py constraints/gpu.txt "${LIBS[@]}")
[ -z "$unmet" ] || { echo "[test-gpu-libs] $venv does not hold the lock's releases: $unmet" >&2; exit 1; }
echo "[test-gpu-libs] running with $(echo $pins)"
exec $venv/bin/python -m pytest -p no:cacheprovider -q tests/unit/test_rl_batch.py \
  tests/unit/test_rollout_correction.py tests/unit/test_train_config.py tests/unit/test_train_backend.py "$@"
