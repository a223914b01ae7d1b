"""Pass iff argv[1] (the answer) equals argv[2] (the expected value), surrounding space ignored."""

import sys


def norm(s):
    return s.replace("\r\n", "\n").replace("\r", "\n").strip()


sys.exit(0 if len(sys.argv) > 2 and norm(sys.argv[1]) == norm(sys.argv[2]) else 1)
