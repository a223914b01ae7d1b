"""AgentBench's OS-interaction text protocol: prompts, action parsing and observation strings."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_OUTPUT_CHARS = 800
KEEP_OUTPUT_CHARS = 780
TRUNCATION_NOTE = "\n[truncated because the output is too long]"
EMPTY_OUTPUT = "The output of the OS is empty."
ROUND_LIMIT = 8

INSTRUCTIONS = """You are an assistant that solves tasks by running commands in a Linux bash shell.
Every turn, first write one short line "Think: ..." and then exactly one action:
1. To run a command:
Act: bash
```bash
<one shell command>
```
2. When you know the answer, reply with it alone inside the parentheses:
Act: answer(<answer>)
3. When the task asked you to change the system and you have done it:
Act: finish"""

ONE_SHOT = [
    {"role": "user", "content": "Task: How many files are in /etc/skel? Answer with the number only."},
    {"role": "assistant", "content": "Think: I count the files.\n\nAct: bash\n\n```bash\nls -A /etc/skel | wc -l\n```"},
    {"role": "user", "content": "The output of the OS:\n\n3"},
    {"role": "assistant", "content": "Think: There are 3 files.\n\nAct: answer(3)"},
]

FORMAT_ERROR = (
    "Your reply has no valid action. Write 'Think: ...' and then 'Act: bash' with one "
    "```bash code block, 'Act: answer(...)' or 'Act: finish'."
)

_ACT = re.compile(r"Act:\s*(.+)")
_THINK = re.compile(r"Think:\s*(.+)")
_BASH_BLOCK = re.compile(r"```(?:bash|sh)?[ \t]*\n(.*?)\n?```", re.DOTALL)


@dataclass(frozen=True)
class OSAction:
    """A parsed action: kind is bash, answer, finish, or invalid (with the reason)."""

    kind: str
    content: str = ""
    thought: str = ""
    error: str = ""


def parse_action(text: str) -> OSAction:
    """Parse a model turn the way AgentBench does: the last valid `Act:` line wins."""
    thought = "\n".join(m.strip() for m in _THINK.findall(text))
    for act in reversed(_ACT.findall(text)):
        head = act.strip().lower()
        if head.startswith("bash"):
            blocks = [b for b in _BASH_BLOCK.findall(text) if b.strip()]
            if not blocks:
                return OSAction("invalid", thought=thought, error="'Act: bash' without a ```bash code block")
            return OSAction("bash", "\n\n".join(blocks), thought)
        if head.startswith("finish"):
            return OSAction("finish", thought=thought)
        if head.startswith("answer"):
            rest = act.strip()[6:]
            left, right = rest.find("("), rest.rfind(")")
            if left == -1 or right == -1 or right < left:
                continue
            return OSAction("answer", rest[left + 1 : right], thought)
    return OSAction("invalid", thought=thought, error="no 'Act: bash', 'Act: answer(...)' or 'Act: finish' line")


def format_output(output: str) -> str:
    """Turn command output into AgentBench's observation string, truncated past 800 characters."""
    if not output.strip():
        return EMPTY_OUTPUT
    if len(output) > MAX_OUTPUT_CHARS:
        output = output[:KEEP_OUTPUT_CHARS] + TRUNCATION_NOTE
    return "The output of the OS:\n\n" + output


def task_prompt(description: str) -> str:
    """The first user message of an episode."""
    return f"Task: {description}"
