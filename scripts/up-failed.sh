#!/usr/bin/env bash
# After `make up` failed: names each service that is unhealthy, still starting or exited with an error, and shows the
# end of its log, so the cause (a traceback in a container) is on the screen, not only "container … is unhealthy";
# the last line names them all again with their health, state and exit code (what a log's tail keeps).
#   bash scripts/up-failed.sh docker compose --env-file .env -p loraloop -f compose.yaml …
set -uo pipefail
dc=("$@")
mapfile -t failed < <("${dc[@]}" ps -a --format '{{.Service}}|{{.Health}}|{{.State}}|{{.ExitCode}}' \
  | awk -F'|' '$2 == "unhealthy" || $2 == "starting" || ($3 == "exited" && $4 != "0") {
      print $1 " (" ($2 == "" ? "" : $2 ", ") $3 ", exit " $4 ")"}' | sort -u)
for line in "${failed[@]}"; do
  service=${line%% *}
  echo "make up: $service did not come up: $line; the end of its log (docker compose logs $service):" >&2
  "${dc[@]}" logs --no-log-prefix --tail 25 "$service" >&2
done
echo "make up: not up: ${failed[*]:-none found}" >&2
exit 1
