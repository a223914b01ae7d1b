#!/usr/bin/env bash
# Runs the test suite; pytest's exit 5 (no tests collected) counts as a failure with a clear message.
# The test files run on LORALOOP_TEST_WORKERS pytest-xdist workers (default 2; 0: in this one process), each
# file's tests on one worker (--dist loadfile: a module's fixtures, such as the bundled tasks played once, are
# set up once). Most tests wait on servers, containers and browsers, so two workers on two cores cut the
# suite's wall time; each worker starts its own session servers (vLLM, Redis, S3, task sites) on free ports.
set -uo pipefail
cd "$(dirname "$0")/.."
workers=${LORALOOP_TEST_WORKERS:-2}
parallel=()
[ "$workers" = 0 ] || parallel=(-n "$workers" --dist loadfile)
.venv/bin/python -m pytest "${parallel[@]}" "$@"
rc=$?
if [ $rc -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi
exit $rc
