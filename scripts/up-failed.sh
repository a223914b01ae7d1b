#!/usr/bin/env bash
# After `make up` failed: names each service that is unhealthy or exited with an error, and shows the end of its log,
# so the cause (a traceback in a container) is on the screen, not only "container … is unhealthy".
#   bash scripts/up-failed.sh docker compose --env-file .env -p loraloop -f compose.yaml …
set -uo pipefail
dc=("$@")
mapfile -t failed < <("${dc[@]}" ps -a --format '{{.Service}} {{.Health}} {{.State}} {{.ExitCode}}' \
  | awk '$2 == "unhealthy" || $2 == "starting" || ($NF != "0" && $0 ~ / exited /) {print $1}' | sort -u)
for service in "${failed[@]}"; do
  echo "make up: $service did not come up; the end of its log (docker compose logs $service):" >&2
  "${dc[@]}" logs --no-log-prefix --tail 25 "$service" >&2
done
exit 1
