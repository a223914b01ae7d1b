#!/usr/bin/env bash
# The front door as a new user meets it: a fresh clone of this checkout's HEAD, then `make demo`, `make test` and
# `make demo` again in it (the second demo after the tests: no state of a previous run may matter), each timed.
# Writes bench/results/fresh_clone.md (date, machine, commit, each command's wall time and exit status, the
# demo's closing summary and pytest's last line) and keeps the full logs beside the clone.
#   bash bench/fresh_clone.sh [STEPS]   STEPS: any of demo,test,demo2 (default all three, in that order)
set -uo pipefail
cd "$(dirname "$0")/.."
steps=${1:-demo,test,demo2}
commit=$(git rev-parse --short HEAD)
clone=$(mktemp -d /tmp/loraloop-fresh.XXXXXX)
git clone -q . "$clone"
out=bench/results/fresh_clone.md
machine="$(nproc)-core $(. /etc/os-release && echo "$PRETTY_NAME"), $(free -g | awk '/Mem:/{print $2}') GiB"
{
  echo "# A fresh clone: make demo, make test, make demo again"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $machine, commit $commit, clone $clone; command: \`bash bench/fresh_clone.sh $steps\`"
  echo
  echo "| step | command | wall time | exit status | result |"
  echo "|---|---|---:|---:|---|"
} > "$out.new"
for step in ${steps//,/ }; do
  target=${step%2}
  started=$(date +%s)
  (cd "$clone" && make "$target") > "$clone/$step.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - started ))
  if [ "$target" = test ]; then
    result=$(grep -E '^=+ .*(passed|failed).* in ' "$clone/$step.log" | tail -1 | tr -d '=' | xargs)
  else
    result=$(grep -E '^ *[0-9]+ +│' "$clone/$step.log" | tail -1 | tr -s ' ' | cut -c1-200)
  fi
  printf '| %s | `make %s` | %d min %02d s | %d | %s |\n' "$step" "$target" $((took / 60)) $((took % 60)) "$rc" \
    "${result:-see $clone/$step.log}" >> "$out.new"
  echo "$step: exit $rc in $took s (log $clone/$step.log)"
done
{
  echo
  for step in ${steps//,/ }; do
    [ "${step%2}" = demo ] || continue
    echo "## $step: the closing summary"
    echo
    echo '```'
    sed -n '/vs smollm_bc on held-out/,/report:/p' "$clone/$step.log"
    echo '```'
    echo
  done
} >> "$out.new"
mv "$out.new" "$out"
echo "wrote $out"
