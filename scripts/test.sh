#!/usr/bin/env bash
# Runs the test suite; pytest's exit 5 (no tests collected) counts as a failure with a clear message.
# Two phases: first the tests marked `serial` (sensitive to load: they count answers against wall time) alone,
# then every other test with the test files on LORALOOP_TEST_WORKERS pytest-xdist workers (default 3, or 2 without
# native bfloat16: below; 0: in this one process), each file's tests on one worker (--dist loadfile: a module's
# fixtures, such as the bundled tasks played once, are set up once). Most tests wait on servers, containers and
# browsers, so three workers on two cores cut the wall time; each worker starts its own session servers (vLLM,
# Redis, S3, sites) on free ports.
# --no-loadscope-reorder: pytest-xdist otherwise hands out the files by their number of tests, most first, which
# undoes tests/conftest.py's LONGEST_FIRST order and starts the long files of few tests (the loop, RL) last.
# OMP_WAIT_POLICY=PASSIVE: torch's OpenMP threads (libgomp) otherwise spin after each parallel region, waiting
# for work; with three workers, their training processes, vLLM and Chromium sharing two cores, the spinning
# threads take the cores from the ones with work. Three forward+backward passes of SmolLM2 on 512 tokens, on 2
# threads beside a 2-thread training run: 80-94 s of wall and CPU with spinning, 25 s passive (1 thread: 34 s).
# VLLM_CPU_KVCACHE_SPACE=1: each vLLM CPU the tests start (one per worker, the loop's, the CI stack's) reserves its
# KV cache whole at start; 1 GiB (46k tokens of SmolLM2-135M, over twice what the tests keep in flight) instead of
# the product's 2 takes 1 GiB less resident a server. Free memory fell to 4 GiB of 24 while the CI stack ran beside
# the three workers, and the CI runner of stop 38 thrashed (loading SmolLM2's weights took two minutes).
set -uo pipefail
cd "$(dirname "$0")/.."
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
# Three workers need the CPU's native bfloat16 (avx512_bf16 or amx_bf16: hardware.py's choice). Without it every
# vLLM and trainer runs in float32, twice the memory: on a 2-core, 24 GiB VM without AVX-512 (2026-11-28) three
# workers took MemAvailable to 105 MiB 14 minutes in, with four vLLM engines at 2.4 GiB each, and the kernel
# killed Chromium; two there.
default_workers=3
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo || default_workers=2
workers=${LORALOOP_TEST_WORKERS:-$default_workers}
if [ "$workers" = 0 ]; then
  .venv/bin/python -m pytest "$@"
  rc=$?
else
  LORALOOP_TEST_PHASE=serial .venv/bin/python -m pytest "$@"
  serial_rc=$?
  [ $serial_rc -eq 5 ] && serial_rc=0  # no serial test among those selected (e.g. the unit lane)
  LORALOOP_TEST_PHASE=parallel .venv/bin/python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
  rc=$?
  [ $rc -eq 0 ] && rc=$serial_rc
fi
if [ $rc -eq 5 ]; then echo "no tests were collected" >&2; exit 1; fi
exit $rc
