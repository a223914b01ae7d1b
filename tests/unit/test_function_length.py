"""No function in services/ is longer than 80 lines (issue #27, item 4: the Task Server's and the gateway's
`create_app` were 371 and 153 lines before they became routers; `loraloop train` at 111 before its flags came from
the config dataclasses, `run_rl` at 92 before its start and its iteration became functions of their own)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80


def lengths() -> dict[str, int]:
    """Every function and method under services/, by file and name, with its length in lines."""
    found = {}
    for path in sorted((ROOT / "services").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{path.relative_to(ROOT).as_posix()}::{node.name}"
                found[name] = max(found.get(name, 0), node.end_lineno - node.lineno + 1)
    return found


def test_no_function_is_longer_than_80_lines():
    too_long = {name: n for name, n in lengths().items() if n > LIMIT}
    assert not too_long, f"over {LIMIT} lines: split them {too_long}"
    assert len(lengths()) > 500  # the walk found the package's functions
