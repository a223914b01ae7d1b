#!/usr/bin/env bash
# Makes the base image every loraloop Dockerfile can start FROM without pulling:
# debootstrap a minimal Debian bookworm and import it as debian:bookworm-slim. The build host's
# CA bundle travels along as /usr/local/share/loraloop/host-ca.crt, so that pip inside a build
# trusts what the host trusts (a proxy's CA included); Dockerfiles use it when it is there.
# Skipped when the tag already exists (the CA file is added to it if missing). Needs root and debootstrap.
set -euo pipefail
TAG=${BASE_TAG:-debian:bookworm-slim}
HOST_CA=/etc/ssl/certs/ca-certificates.crt
if ! docker image inspect "$TAG" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || { echo "base: debootstrap is missing ('apt-get install -y debootstrap')" >&2; exit 1; }
  MIRROR=${DEBIAN_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
  MIRROR=${MIRROR:-http://deb.debian.org/debian}
  ROOTFS=$(mktemp -d /tmp/loraloop-rootfs.XXXXXX)
  trap 'rm -rf "$ROOTFS"' EXIT
  echo "base: debootstrap bookworm from $MIRROR"
  debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >/dev/null
  if [ -f "$HOST_CA" ]; then
    mkdir -p "$ROOTFS/etc/ssl/certs" && cp "$HOST_CA" "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
    mkdir -p "$ROOTFS/usr/local/share/loraloop" && cp "$HOST_CA" "$ROOTFS/usr/local/share/loraloop/host-ca.crt"
  fi
  tar -C "$ROOTFS" -c . | docker import - "$TAG" >/dev/null
  echo "base: imported $TAG"
else
  echo "base: $TAG present"
fi
if [ -f "$HOST_CA" ] && ! docker run --rm --network none "$TAG" test -f /usr/local/share/loraloop/host-ca.crt; then
  printf 'FROM %s\nCOPY ca-certificates.crt /usr/local/share/loraloop/host-ca.crt\n' "$TAG" \
    | docker build -q -t "$TAG" -f - "$(dirname "$HOST_CA")" >/dev/null
  echo "base: added the host's CA bundle to $TAG"
fi
