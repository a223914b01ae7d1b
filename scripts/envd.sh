#!/usr/bin/env bash
# A Docker engine for environment containers whose disk use is bounded for real. Its data root is a btrfs
# filesystem with quotas on (a sparse loop image of LORALOOP_ENVD_DISK_GB, default 40), where
# `docker run --storage-opt size=` (LORALOOP_CONTAINER_DISK) caps everything a container writes. The default
# engine's overlay2 on ext4 cannot: a per-file limit does not bound the total. The shell images
# (LORALOOP_ENVD_IMAGES, default the three os-env images) are copied into it from the default engine.
# Point workers at it with DOCKER_HOST (`envd.sh socket` prints it). `export DIR` writes those images for the
# Compose stack's envd service instead (images/envd/envd.sh loads them): DIR/images.tar and DIR/images.ids,
# a `name id` line each, rewritten only when an id changed.
#   scripts/envd.sh start|stop|status|socket|export DIR
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=${LORALOOP_STATE_DIR:-$(pwd)/volumes/.run}/envd
# a unix socket path may hold 107 bytes: a short one in /tmp, named after this checkout's state folder
SOCK=unix:///tmp/loraloop-envd-$(printf %s "$STATE" | md5sum | cut -c1-12).sock
IMG=$STATE/disk.img
ROOT=$STATE/root
read -r -a IMAGES <<<"${LORALOOP_ENVD_IMAGES:-loraloop/os-env:latest loraloop/os-env-packages:latest loraloop/os-env-ubuntu:latest}"
envd() { DOCKER_HOST=$SOCK docker "$@"; }

case "${1:-start}" in
start)
  if ! envd info >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then echo "envd: needs root (a loop mount and a dockerd of its own)" >&2; exit 1; fi
    for tool in dockerd mkfs.btrfs btrfs; do
      command -v $tool >/dev/null || { echo "envd: $tool is missing; run 'make setup' (Debian: docker.io, btrfs-progs)" >&2; exit 1; }
    done
    grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || {
      echo "envd: this kernel has no btrfs, so no per-container disk quota; the default engine bounds files only" >&2; exit 1; }
    mkdir -p "$ROOT" "$STATE/exec"
    if [ ! -f "$IMG" ]; then
      truncate -s "${LORALOOP_ENVD_DISK_GB:-40}G" "$IMG"
      mkfs.btrfs -q "$IMG" >/dev/null
    fi
    mountpoint -q "$ROOT" || mount -o loop "$IMG" "$ROOT"
    btrfs quota enable "$ROOT"
    echo "envd: starting dockerd on btrfs (log: $STATE/dockerd.log)"
    setsid dockerd --host "$SOCK" --data-root "$ROOT/docker" --exec-root "$STATE/exec" --pidfile "$STATE/dockerd.pid" \
      --storage-driver btrfs --bridge=none --iptables=false --ip-masq=false >"$STATE/dockerd.log" 2>&1 &
    for _ in $(seq 1 60); do envd info >/dev/null 2>&1 && break; sleep 0.5; done
    envd info >/dev/null 2>&1 || { echo "envd: dockerd did not answer within 30 s; see $STATE/dockerd.log" >&2; exit 1; }
  fi
  for image in "${IMAGES[@]}"; do  # copy what the default engine built, when this one lacks it or holds an older one
    want=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null) || continue
    [ "$(envd image inspect -f '{{.Id}}' "$image" 2>/dev/null)" = "$want" ] && continue
    echo "envd: copying $image"
    docker save "$image" | envd load -q >/dev/null
  done
  echo "envd: ready at $SOCK (DOCKER_HOST=$SOCK LORALOOP_CONTAINER_DISK=2g)"
  ;;
stop)
  if [ -f "$STATE/dockerd.pid" ]; then
    pid=$(cat "$STATE/dockerd.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  fi
  if mountpoint -q "$ROOT"; then umount "$ROOT"; fi
  echo "envd: stopped (its disk image stays: $IMG)"
  ;;
status) envd info --format '{{.ServerVersion}} {{.Driver}}' ;;
socket) echo "$SOCK" ;;
export)
  out=${2:?usage: $0 export DIR}
  ids=""
  for image in "${IMAGES[@]}"; do
    id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null) || {
      echo "envd: image $image (LORALOOP_ENVD_IMAGES) is missing on this engine; run 'make images'" >&2; exit 1; }
    ids+="$image $id"$'\n'
  done
  if [ "$ids" != "$(cat "$out/images.ids" 2>/dev/null)"$'\n' ]; then
    mkdir -p "$out"
    echo "envd: saving ${IMAGES[*]} to $out/images.tar"
    docker save -o "$out/images.tar.new" "${IMAGES[@]}"
    mv "$out/images.tar.new" "$out/images.tar"  # the tar first: an envd that sees the new ids finds it
    printf %s "$ids" >"$out/images.ids.new" && mv "$out/images.ids.new" "$out/images.ids"
  fi
  ;;
*) echo "usage: $0 start|stop|status|socket|export DIR" >&2; exit 2 ;;
esac
