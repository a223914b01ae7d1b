"""Pass iff a script the agent wrote is an executable file and a command using it prints what is expected.

argv: [answer (unused), script path, command line, expected output]; the last three are the
outputs of the check steps before this one (e.g. `echo /root/bin/x.sh`), so a step may prepare
input or compute the expected value at grading time. The command runs with bash in /root, stdin
closed, 10 s at most; outputs are compared line by line with surrounding white space ignored.
"""

import os
import subprocess
import sys


def lines(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    return [line.strip() for line in text.split("\n")]


def main(argv):
    if len(argv) < 5:
        return 1
    path, command, expected = argv[2].strip(), argv[3].strip(), argv[4]
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return 1
    try:
        result = subprocess.run(
            ["bash", "-c", command], cwd="/root", stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10
        )
    except subprocess.TimeoutExpired:
        return 1
    return 0 if lines(result.stdout) == lines(expected) else 1


sys.exit(main(sys.argv))
