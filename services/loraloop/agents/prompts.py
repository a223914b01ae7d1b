"""Chat messages for a turn, shared by the live policy and the dataset export so both see the same prompt."""
from __future__ import annotations

import re

Message = dict[str, str]


def build_messages(instructions: str, examples: list[Message], first_observation: str,
                   turns: list[tuple[str, str]], char_budget: int = 4000) -> list[Message]:
    """System + one-shot examples + task, then (assistant, user) turns, oldest dropped past the budget.

    `turns` holds (model_output, next_observation) pairs. The system prompt, the examples and the
    task always stay; when the history grows past `char_budget` characters the oldest turns go.
    """
    head = [{"role": "system", "content": instructions}, *examples, {"role": "user", "content": first_observation}]
    tail: list[Message] = []
    used = sum(len(m["content"]) for m in head)
    for output, observation in reversed(turns):
        pair = [{"role": "assistant", "content": output}, {"role": "user", "content": observation}]
        cost = len(output) + len(observation)
        if tail and used + cost > char_budget:
            break
        tail = pair + tail
        used += cost
    return head + tail


def _goal(first_observation: str) -> str:
    """The `# Goal` section of a web episode's first observation."""
    head, _, rest = first_observation.partition("# Goal\n")
    return rest.split("\n\n# ", 1)[0].strip() if not head.strip() else ""


def _action_line(output: str) -> str:
    """The action a reply carried, for the history: its `Action:` line, else a call-shaped line."""
    lines = [line.strip().strip("`") for line in output.strip().splitlines() if line.strip()]
    acts = [line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("action:")]
    acts = acts or [line for line in lines if re.match(r"^[a-z_]+\(", line)]
    return acts[0][:200] if acts else "(no valid action)"


def build_web_messages(instructions: str, first_observation: str, turns: list[tuple[str, str]],
                       char_budget: int = 4000) -> list[Message]:
    """System + one user message: goal, the past actions (newest kept), then only the current page.

    BrowserGym's agents prompt this way: the page is large and only its latest state matters, so
    earlier pages are not repeated; the page text is cut to what the budget leaves.
    """
    current = turns[-1][1] if turns else first_observation
    if current.startswith("# Goal\n"):
        current = current.split("\n\n", 1)[1] if "\n\n" in current else ""
    goal = f"# Goal\n{_goal(first_observation)}\n\n"
    history: list[str] = []
    used = len(goal)
    for i in range(len(turns) - 1, -1, -1):
        line = f"{i + 1}. {_action_line(turns[i][0])}"
        if used + len(line) > char_budget // 3:
            history.insert(0, f"(… {i + 1} earlier actions)")
            break
        history.insert(0, line)
        used += len(line) + 1
    past = "# Past actions\n" + "\n".join(history) + "\n\n" if history else ""
    room = max(char_budget - len(goal) - len(past), 500)
    page = current if len(current) <= room else current[:room] + "\n… (page cut to fit the prompt)"
    return [{"role": "system", "content": instructions}, {"role": "user", "content": goal + past + page}]


def build_prompt(style: str, instructions: str, examples: list[Message], first_observation: str,
                 turns: list[tuple[str, str]], char_budget: int = 4000) -> list[Message]:
    """The prompt for an environment's style: `chat` (shell: the whole dialogue) or `web` (current page)."""
    if style == "web":
        return build_web_messages(instructions, first_observation, turns, char_budget)
    return build_messages(instructions, examples, first_observation, turns, char_budget)
