"""Pass iff argv[1] and argv[2] are the same size ("4.0K", "12KB", "512"), in bytes."""

import sys

UNITS = {
    "B": 1,
    "BYTE": 1,
    "K": 1024,
    "KB": 1024,
    "M": 1024**2,
    "MB": 1024**2,
    "G": 1024**3,
    "GB": 1024**3,
    "T": 1024**4,
    "TB": 1024**4,
    "P": 1024**5,
    "PB": 1024**5,
}


def size(text):
    text = text.strip().upper()
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * UNITS[unit]
    return float(text)


try:
    sys.exit(0 if size(sys.argv[1]) == size(sys.argv[2]) else 1)
except (ValueError, IndexError):
    sys.exit(1)
