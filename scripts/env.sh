#!/usr/bin/env bash
# The stack's env file: `env.sh new FILE` writes FILE from .env.example with a random MinIO password, gateway
# admin key and Task Server token (kept if FILE exists); `env.sh check FILE` refuses an env file whose MinIO password
# is missing, empty, short or the example's, one without a Task Server token, and one that still points the workers
# at the host's socket, which no service mounts since envd, and one whose GPU memory split cannot fit.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:?usage: env.sh new|check FILE}
file=${2:-.env}
value() { grep -E "^$1=" "$2" | tail -n 1 | cut -d= -f2- || true; }  # NAME FILE: the last NAME=… line's value
case "$action" in
  new)
    if [ -e "$file" ]; then echo "$file exists: kept as it is"; exit 0; fi
    secret=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
    admin=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
    token=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
    sed -e "s/^MINIO_ROOT_PASSWORD=.*/MINIO_ROOT_PASSWORD=$secret/" -e "s/^GATEWAY_ADMIN_KEY=.*/GATEWAY_ADMIN_KEY=$admin/" \
      -e "s/^TASK_SERVER_TOKEN=.*/TASK_SERVER_TOKEN=$token/" .env.example > "$file"
    chmod 600 "$file"
    echo "wrote $file with a random MINIO_ROOT_PASSWORD, GATEWAY_ADMIN_KEY and TASK_SERVER_TOKEN (readable by you only)";;
  check)
    if [ ! -f "$file" ]; then
      echo "no env file $file: run 'make env' (writes .env with a random MinIO password) or pass ENV_FILE=" >&2; exit 1
    fi
    pw=$(value MINIO_ROOT_PASSWORD "$file")
    case "$pw" in
      ""|change-me-please)
        echo "$file: MINIO_ROOT_PASSWORD is ${pw:-not set}; the stack needs a password of your own: set one of 8 or more" \
             "characters there, or remove $file and run 'make env' for a random one" >&2; exit 1;;
    esac
    if [ ${#pw} -lt 8 ]; then
      echo "$file: MINIO_ROOT_PASSWORD has ${#pw} characters; MinIO needs 8 or more" >&2; exit 1
    fi
    if ! grep -qE '^TASK_SERVER_TOKEN=.{16,}' "$file"; then
      echo "$file: TASK_SERVER_TOKEN is missing or shorter than 16 characters; the Task Server needs one: add" \
           "TASK_SERVER_TOKEN=\$(python3 -c 'import secrets; print(secrets.token_hex(16))') there" >&2; exit 1
    fi
    if grep -qE '^WORKER_DOCKER_HOST=(unix://)?/var/run/docker.sock$' "$file"; then
      echo "$file: WORKER_DOCKER_HOST is the host's socket, which no service mounts now: empty it (the stack's envd" \
           "runs environment containers; for the host's engine add -f compose.host-engine.yaml to COMPOSE_FILES)" >&2
      exit 1
    fi
    # a trainer share set means a trainer on vllm's GPU (docs/gpu.md): refuse a split that cannot fit before starting.
    # The rule of loraloop.settings.Settings._split_fits, again here: `make up` runs before any virtualenv exists.
    python3 - "$file" "$(value VLLM_GPU_MEMORY_UTILIZATION "$file")" "$(value LORALOOP_TRAIN_GPU_FRACTION "$file")" <<'PY'
import sys
file, served, train = (value.split(" #")[0].strip().strip("'\"") for value in sys.argv[1:])  # as compose reads them
served = served or "0.9"
try:
    shares = [float(served), float(train or 0)]
except ValueError:
    sys.exit(f"{file}: VLLM_GPU_MEMORY_UTILIZATION={served!r} and LORALOOP_TRAIN_GPU_FRACTION={train!r} must be numbers")
if train and round(sum(shares), 9) > 1:
    sys.exit(f"{file}: LORALOOP_TRAIN_GPU_FRACTION {train} + VLLM_GPU_MEMORY_UTILIZATION {served} = {sum(shares):.2f} of "
             "one GPU: lower either (the sum at most 1), or leave LORALOOP_TRAIN_GPU_FRACTION empty when the trainer "
             "has GPUs of its own")
PY
    ;;
  *) echo "usage: env.sh new|check FILE" >&2; exit 2;;
esac
