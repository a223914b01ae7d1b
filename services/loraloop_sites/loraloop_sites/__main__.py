"""`loraloop-sites --host 127.0.0.1 --port 8090` (or `python -m loraloop_sites`): serve the task websites."""

from __future__ import annotations

import argparse

from .app import serve


def main() -> None:
    """Parse --host and --port and serve until interrupted."""
    parser = argparse.ArgumentParser(prog="loraloop-sites", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    args = parser.parse_args()
    serve(args.host, args.port)


if __name__ == "__main__":
    main()
