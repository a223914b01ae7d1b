"""Pass iff the answer argv[1] occurs inside the expected value argv[2]."""

import sys


def norm(s):
    return s.replace("\r\n", "\n").replace("\r", "\n").strip()


sys.exit(0 if len(sys.argv) > 2 and norm(sys.argv[1]) in norm(sys.argv[2]) else 1)
