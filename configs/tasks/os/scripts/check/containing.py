"""Pass iff the expected value argv[2] occurs inside the answer argv[1]."""

import sys


def norm(s):
    return s.replace("\r\n", "\n").replace("\r", "\n").strip()


sys.exit(0 if len(sys.argv) > 2 and norm(sys.argv[2]) in norm(sys.argv[1]) else 1)
