#!/usr/bin/env bash
# The entrypoint of the stack's `envd` service: a dockerd of its own for environment containers, listening
# only on the unix socket $DOCKER_HOST, which lies in a volume the workers and the task server share.
# Its data root is a loop image in the volume at /var/lib/envd (ENVD_FS, below). It loads the shell images
# that `scripts/envd.sh export` wrote to /images (images.tar, and images.ids: a `name id` line each), skipping
# those present with the same id, and only then says ready (/run/envd.ready, which the healthcheck reads), so
# that workers start once the images are in. A newer images.ids (make up after make images) is loaded within
# 10 s. Arguments go to dockerd.
#   envd [DOCKERD_ARG...]
set -euo pipefail
SOCK=${DOCKER_HOST#unix://}
STATE=/var/lib/envd
READY=/run/envd.ready
IDS=/images/images.ids

# Docker in Docker, as moby's hack/dind: AppArmor learns it runs in a container, securityfs is mounted, and
# on cgroup v2 the root group is emptied so that controllers can be handed down to the inner containers.
export container=docker
if [ -d /sys/kernel/security ] && ! mountpoint -q /sys/kernel/security; then
  mount -t securityfs none /sys/kernel/security || echo "envd: could not mount securityfs (no AppArmor inside)" >&2
fi
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  mkdir -p /sys/fs/cgroup/init
  xargs -rn1 </sys/fs/cgroup/cgroup.procs >/sys/fs/cgroup/init/cgroup.procs || :
  sed -e 's/ / +/g' -e 's/^/+/' </sys/fs/cgroup/cgroup.controllers >/sys/fs/cgroup/cgroup.subtree_control
fi
mount --make-rshared /
# Not privileged (compose.yaml: SYS_ADMIN, NET_ADMIN and no seccomp): cgroups come read-only, and the loop
# devices for the data root's image are made here (the cgroup rule lets them be used): the host's, and 8 more that
# /dev/loop-control may add.
awk '$2 ~ "^/sys/fs/cgroup" && $4 ~ "(^|,)ro(,|$)" {print $2}' /proc/mounts \
  | while read -r m; do mount -o remount,bind,rw "$m"; done
last=$(ls /sys/block | sed -n 's/^loop\([0-9]*\)$/\1/p' | sort -n | tail -1)
for i in $(seq 0 $((${last:-0} + 8))); do [ -e /dev/loop$i ] || mknod /dev/loop$i b 7 $i; done

# The data root (ENVD_FS): `ext4`, overlay2 on an ext4 loop image of ENVD_DISK_GB (sparse, in the volume), which
# bounds what all environment containers together take from the host's disk; `btrfs`, the same image as btrfs
# with quotas on, where CONTAINER_DISK also caps each container (slower: docs/compose.md, envd); `volume`,
# overlay2 on the volume itself (no loop device, no bound).
fs=${ENVD_FS:-ext4}
case "$fs" in
  ext4|btrfs)
    grep -qw "$fs" /proc/filesystems || {
      echo "envd: this kernel has no $fs; set ENVD_FS=volume in .env (no disk bound)" >&2; exit 1; }
    img=$STATE/$fs.img
    if [ ! -f "$img" ]; then
      truncate -s "${ENVD_DISK_GB:-40}G" "$img.new"
      if [ "$fs" = ext4 ]; then mkfs.ext4 -q -m 0 "$img.new"; else mkfs.btrfs -q "$img.new" >/dev/null; fi
      mv "$img.new" "$img"
    fi
    mkdir -p /var/lib/docker
    mount -o loop "$img" /var/lib/docker
    if [ "$fs" = btrfs ]; then btrfs quota enable /var/lib/docker; fi
    storage=(--data-root /var/lib/docker --storage-driver "$([ "$fs" = ext4 ] && echo overlay2 || echo btrfs)") ;;
  volume) storage=(--data-root "$STATE/docker" --storage-driver overlay2) ;;
  *) echo "envd: ENVD_FS=$fs: not ext4, btrfs or volume" >&2; exit 1 ;;
esac

# Loads images.tar unless every image of images.ids is here with its id; fails when one is still missing.
load_images() {
  if [ ! -f "$IDS" ]; then
    echo "envd: no $IDS: no shell image loaded (make up writes it: scripts/envd.sh export volumes/envd-images)" >&2
    return
  fi
  local name id stale=()
  while read -r name id; do
    [ "$(docker image inspect -f '{{.Id}}' "$name" 2>/dev/null)" = "$id" ] || stale+=("$name")
  done <"$IDS"
  ((${#stale[@]})) || return 0
  echo "envd: loading ${stale[*]} from /images/images.tar"
  docker load -q -i /images/images.tar >/dev/null
  while read -r name id; do
    [ "$(docker image inspect -f '{{.Id}}' "$name" 2>/dev/null)" = "$id" ] || {
      echo "envd: /images/images.tar holds no $name with id $id (rerun: scripts/envd.sh export volumes/envd-images)" >&2
      return 1; }
  done <"$IDS"
}

rm -f "$READY" /var/run/docker.pid
mkdir -p "$(dirname "$SOCK")"
dockerd --host "unix://$SOCK" "${storage[@]}" "$@" &
pid=$!
# On stop, environment containers are killed at once (they hold nothing worth 10 s of grace each), then dockerd.
stop() {
  docker ps -q | xargs -r docker kill >/dev/null || :
  kill -TERM $pid
  wait $pid
  exit
}
trap stop TERM INT
for _ in $(seq 1 120); do
  docker info >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { wait $pid; exit; }
  sleep 0.5
done
load_images
touch "$READY"
echo "envd: ready at $DOCKER_HOST ($(docker info --format '{{.Driver}}'))"
while kill -0 $pid 2>/dev/null; do
  sleep 10 & wait $! || :
  if [ "$IDS" -nt "$READY" ]; then load_images && touch "$READY"; fi
done
wait $pid
