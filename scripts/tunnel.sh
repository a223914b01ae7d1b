#!/usr/bin/env bash
# Split setup: forward the GPU host's vLLM, vLLM-LoRA, MinIO and rollout API ports to 127.0.0.1 here,
# so local rollout workers write straight into the GPU host's MinIO and call its vLLM. Binds loopback
# only, keeps the connection alive, says so when it drops, and reconnects.
#   scripts/tunnel.sh user@gpu-host [ports: default "8000 9000 8080"]
# A port is N (the same number on both ends) or LOCAL:REMOTE. TUNNEL_SSH_OPTS adds ssh options
# (e.g. "-p 2222 -i ~/.ssh/gpu"); TUNNEL_RETRY_S is the pause before reconnecting (default 5).
set -uo pipefail
HOST=${1:?usage: scripts/tunnel.sh user@gpu-host [ports]}
PORTS=${2:-${TUNNEL_PORTS:-8000 9000 8080}}
RETRY_S=${TUNNEL_RETRY_S:-5}
read -r -a ssh_opts <<<"${TUNNEL_SSH_OPTS:-}"
forwards=()
for port in $PORTS; do
  if [[ ! $port =~ ^([0-9]+)(:([0-9]+))?$ ]]; then
    echo "tunnel: '$port' is not a port; give N or LOCAL:REMOTE (e.g. \"8000 19000:9000\")" >&2
    exit 2
  fi
  forwards+=(-L "127.0.0.1:${BASH_REMATCH[1]}:127.0.0.1:${BASH_REMATCH[3]:-${BASH_REMATCH[1]}}")
done
while true; do
  echo "tunnel: forwarding 127.0.0.1:{${PORTS// /,}} to ${HOST} (Ctrl-C to stop)"
  ssh -N -o ExitOnForwardFailure=yes -o ServerAliveInterval=15 -o ServerAliveCountMax=3 \
      -o BatchMode=yes "${ssh_opts[@]}" "${forwards[@]}" "$HOST"
  rc=$?
  echo "tunnel: the SSH connection to ${HOST} dropped (exit ${rc}); vLLM and MinIO on 127.0.0.1 are unreachable until it is back. Reconnecting in ${RETRY_S} s." >&2
  sleep "$RETRY_S"
done
