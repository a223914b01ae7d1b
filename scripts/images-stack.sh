#!/usr/bin/env bash
# Builds every image of the CPU stack and its CI override (rollout, sites, envd, vLLM CPU, CI's Redis and S3)
# with the layer cache, so that `make up` and the stack tests find them built: a cold build of vLLM CPU and the
# rollout image takes about ten minutes here, and belongs to `make images-stack`, not to a test's time.
# The envd image's shell images (volumes/envd-images) are exported too. An env file is needed only for
# compose's interpolation: a throwaway one from .env.example is used.
set -euo pipefail
cd "$(dirname "$0")/.."
env_file=$(mktemp -u /tmp/loraloop-images-env.XXXXXX)
trap 'rm -f "$env_file"' EXIT
bash scripts/env.sh new "$env_file" >/dev/null
started=$(date +%s)
docker compose --env-file "$env_file" -f compose.yaml -f compose.cpu.yaml -f compose.ci.yaml --profile '*' build -q
bash scripts/envd.sh export volumes/envd-images
echo "images-stack: built in $(( $(date +%s) - started )) s"
