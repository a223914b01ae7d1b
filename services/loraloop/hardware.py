"""The dtype models are loaded in (vLLM and training), chosen from what the CPU computes natively.

A CPU without bfloat16 instructions (AVX512-BF16 or AMX-BF16) converts every bfloat16 value to
float32 and back, so there float32 is the faster choice (docs/gpu.md, "bfloat16 or float32": bench/vllm_dtype.py).
Standard library only: the vllm-cpu image runs this file to pick vLLM's --dtype
(`python hardware.py [auto|float32|bfloat16]` prints the choice).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DTYPES = ("auto", "float32", "bfloat16")
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
CPUINFO = Path("/proc/cpuinfo")


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The feature flags of the first processor in /proc/cpuinfo text (empty when it lists none)."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def cpu_has_bf16(cpuinfo: str | None = None) -> bool:
    """True when the CPU computes bfloat16 in hardware (AVX512-BF16 or AMX-BF16); reads /proc/cpuinfo
    unless given its text, and says False where there is none (not Linux)."""
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text()
        except OSError:
            return False
    return bool(cpu_flags(cpuinfo) & BF16_FLAGS)


def choose_dtype(setting: str = "auto", *, bf16: bool | None = None) -> str:
    """The dtype to load a model in: `setting` (LORALOOP_DTYPE) unless it is auto; for auto bfloat16
    where the hardware computes it natively (`bf16`; default: this CPU's flags), else float32."""
    if setting not in DTYPES:
        raise ValueError(f"LORALOOP_DTYPE must be one of {', '.join(DTYPES)}, got {setting!r}")
    if setting != "auto":
        return setting
    return "bfloat16" if (cpu_has_bf16() if bf16 is None else bf16) else "float32"


if __name__ == "__main__":
    try:
        print(choose_dtype(sys.argv[1] if len(sys.argv) > 1 else "auto"))
    except ValueError as exc:
        sys.exit(f"error: {exc}")


def cpu_list(text: str) -> set[int]:
    """The CPUs of a list in taskset/cpuset syntax ("0", "0-3", "0,2-3"); empty text is the empty set (any CPU).
    Raises ConfigError naming the text when it is not such a list or names a CPU this machine does not have."""
    from loraloop.errors import ConfigError

    cpus: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and (not high.isdigit() or int(high) < int(low))):
            raise ConfigError(f"LORALOOP_ROLLOUT_CPUS={text!r}: {part!r} is not a CPU or a range of CPUs like 0-3")
        cpus |= set(range(int(low), int(high or low) + 1))
    machine = set(range(os.cpu_count() or 1))  # not this thread's affinity: a trainer may have pinned itself away
    missing = cpus - machine
    if missing:
        raise ConfigError(
            f"LORALOOP_ROLLOUT_CPUS={text!r}: CPU {min(missing)} is not one of this machine's (0-{max(machine)})"
        )
    return cpus
