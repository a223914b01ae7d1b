#!/usr/bin/env bash
# `make demo`: the shell images (starting a Docker engine if none answers), then `loraloop demo` (the whole
# loop on the bundled shell tasks, its closing summary and report). It stops what it started: the vLLM it
# began (loraloop demo does) and the Docker engine, when this run had to start one. Its exit status is
# loraloop demo's. Arguments go to `loraloop demo` (e.g. --epochs 2).
set -uo pipefail
cd "$(dirname "$0")/.."
engine_was_up=no
docker info >/dev/null 2>&1 && engine_was_up=yes
stop_engine() { [ "$engine_was_up" = yes ] || bash scripts/dockerd.sh stop; }
trap stop_engine EXIT
make --no-print-directory images || exit $?
.venv/bin/loraloop demo "$@"
