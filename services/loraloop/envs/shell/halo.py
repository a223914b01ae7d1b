"""What HALO's orchestrator asks of a shell episode: the rule for a command that worked, the recovery move, the
destructive commands the manager sees first, and the macros (`Act: find_and_count(directory='/etc',
pattern='*.conf')`), written in AgentBench's text protocol. kind.py gathers them into the shell kind's
AgentFacet (kinds/spec.py); agents/ reaches them only through it.
"""

from __future__ import annotations

import re
import shlex

from loraloop.calls import MacroSteps
from loraloop.envs.base import StepInfo
from loraloop.envs.shell.protocol import EMPTY_OUTPUT
from loraloop.errors import MacroError
from loraloop.store.records import Step

NO_ERROR = "no error was recorded"
# Shell commands that destroy: recursive removal, killing processes, recursive permission changes.
DESTRUCTIVE = re.compile(
    r"\brm\s+(-\w*[rR]\w*|--recursive)\b|\b(kill|pkill|killall)\b|\bchmod\s+(-\w*R\w*|--recursive)\b"
)


def action_worked(info: StepInfo, _before: str, _after: str) -> bool:
    """A command that raised no error worked when it exited 0."""
    return info.exit_code == 0


def destructive(command: str) -> bool:
    """A shell command that destroys (`rm -r`, `kill`, `chmod -R`)."""
    return bool(DESTRUCTIVE.search(command))


def inert(text: str, limit: int = 200) -> str:
    """Text safe to echo inside a shell action: one line, no code fences, no `Act:` the parser could take for
    the action itself (an error quoting `Act: finish` must not end the episode)."""
    return " ".join(text.split()).replace("`", "'").replace("Act:", "Act")[:limit]


def recovery(trigger: str, steps: list[Step]) -> str:
    """Return to the home folder (the cwd reset) and show the last error, so the next reply sees it."""
    error = next((s.last_action_error for s in reversed(steps) if s.last_action_error), None) or NO_ERROR
    note = shlex.quote(f"recovery ({trigger}); last error: {inert(error)}")
    return _bash("recover: back to the home folder and the last error.", f"cd ~ && echo {note}")


def _bash(think: str, command: str) -> str:
    return f"Think: {think}\n\nAct: bash\n\n```bash\n{command}\n```"


def _output(observation: str) -> str:
    """The command's output in a shell observation (AgentBench's `The output of the OS:` text)."""
    if observation.strip() == EMPTY_OUTPUT:
        return ""
    head, _, rest = observation.partition("\n\n")
    return rest.strip() if head.startswith("The output of the OS") else observation.strip()


def _missing(macro: str, what: str, output: str) -> None:
    if "No such file or directory" in output:
        raise MacroError(f"{macro}: {what} does not exist ({output.splitlines()[0][:200]})")


def inspect_then_answer(observation: str, path: str) -> MacroSteps:
    """Show a file (`cat`) or a folder (`ls -A`), then answer with what it holds, on one line."""
    quoted = shlex.quote(path)
    observation = yield _bash(f"I look at {path}.", f"if [ -d {quoted} ]; then ls -A {quoted}; else cat {quoted}; fi")
    output = _output(observation)
    _missing("inspect_then_answer", f"path {path!r}", output)
    answer = " ".join(line.strip() for line in output.splitlines() if line.strip())
    yield f"Think: {path} holds the answer.\n\nAct: answer({answer})"


def find_and_count(observation: str, directory: str, pattern: str) -> MacroSteps:
    """Count the files under `directory` whose name matches `pattern` (find -type f -name | wc -l), answer it."""
    command = f"find {shlex.quote(directory)} -type f -name {shlex.quote(pattern)} | wc -l"
    observation = yield _bash(f"I count the files named {pattern} under {directory}.", command)
    output = _output(observation)
    _missing("find_and_count", f"directory {directory!r}", output)
    last = output.splitlines()[-1].strip() if output else ""
    if not last.isdigit():
        raise MacroError(f"find_and_count: find printed no count ({output[:200]!r})")
    yield f"Think: There are {last} such files.\n\nAct: answer({last})"
