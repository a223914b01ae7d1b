"""Pass iff argv[1] (the answer) and argv[2] (the expected value) are the same integer."""

import sys

try:
    sys.exit(0 if int(sys.argv[1].strip()) == int(sys.argv[2].strip()) else 1)
except (ValueError, IndexError):
    sys.exit(1)
