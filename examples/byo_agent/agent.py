"""A small agent of its own, trained by loraloop through the recording gateway ("bring your own agent").

It knows nothing of loraloop: it talks to an OpenAI-compatible endpoint with the official `openai`
client and runs its own environment, a stock-room: each task asks how many of an item are in
stock, and the agent's one tool, `lookup`, reads the stock list. A reply `lookup: <item>` calls
the tool (its result comes back as the next user message), a reply `answer: <number>` ends the
episode; reward 1 for the right count, 0 otherwise.

Only three calls are the gateway's own (AReaL's online API): start a session (admin key), set
the reward, end the session. Every model call in between is recorded by the gateway, token-exact.

    python examples/byo_agent/agent.py --gateway http://127.0.0.1:8070 --admin_key "$LORALOOP_GATEWAY_ADMIN_KEY" \
        --split train --attempts 4 --experiment byo_agent --run_id round0
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys

import httpx
from openai import OpenAI

ITEMS = [
    "apples",
    "bolts",
    "candles",
    "drills",
    "envelopes",
    "forks",
    "gloves",
    "hammers",
    "ink",
    "jars",
    "kettles",
    "lamps",
    "mugs",
    "nails",
    "oars",
    "pens",
    "quilts",
    "ropes",
    "saws",
    "tape",
]
SYSTEM = (
    "You answer questions about the stock room. You have one tool. To use it reply exactly "
    "`lookup: <item>`; the stock list for that item comes back. When you know the count reply exactly "
    "`answer: <number>`."
)
EXAMPLE = [
    {"role": "user", "content": "How many cups are in stock?"},
    {"role": "assistant", "content": "lookup: cups"},
    {"role": "user", "content": "Tool result: cups: 12 in stock"},
    {"role": "assistant", "content": "answer: 12"},
]
MAX_TURNS = 3


def tasks(split: str) -> list[dict]:
    """The task family: train asks about the first 12 items, test about the other 8 (counts fixed by a seed)."""
    rng = random.Random(7)
    stock = {item: rng.randint(2, 99) for item in ITEMS}
    chosen = ITEMS[:12] if split == "train" else ITEMS[12:]
    return [{"task_id": f"stock-{item}", "item": item, "count": stock[item], "stock": stock} for item in chosen]


def lookup(stock: dict, reply: str) -> str:
    """The tool: the stock line of the item named after `lookup:` (its first word; what follows is ignored)."""
    name = (re.findall(r"[a-z]+", reply.split(":", 1)[1].lower()) or [""])[0]
    return f"Tool result: {name}: {stock[name]} in stock" if name in stock else f"Tool result: no item {name!r}"


def play(client: OpenAI, model: str, task: dict, temperature: float) -> float:
    """One episode: ask, let the model use the tool, score its answer."""
    messages = [
        {"role": "system", "content": SYSTEM},
        *EXAMPLE,
        {"role": "user", "content": f"How many {task['item']} are in stock?"},
    ]
    for _ in range(MAX_TURNS):
        reply = (
            client.chat.completions.create(model=model, messages=messages, temperature=temperature, max_tokens=24)
            .choices[0]
            .message.content
            or ""
        )
        messages.append({"role": "assistant", "content": reply})
        text = reply.strip().lower()
        if text.startswith("answer:"):
            found = re.search(r"\d+", text)
            return float(found is not None and int(found.group()) == task["count"])
        if text.startswith("lookup:"):
            messages.append({"role": "user", "content": lookup(task["stock"], text)})
        else:
            messages.append({"role": "user", "content": "Reply `lookup: <item>` or `answer: <number>`."})
    return 0.0


def main() -> int:
    """Play every task of a split `--attempts` times through the gateway, each in its own session; print success."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gateway", default="http://127.0.0.1:8070")
    parser.add_argument("--admin_key", required=True)
    parser.add_argument("--model", default="SmolLM2-135M-Instruct", help="the base model or an adapter version")
    parser.add_argument("--split", default="train", choices=["train", "test"])
    parser.add_argument("--attempts", type=int, default=4, help="sessions per task (RL compares them)")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--experiment", default="byo_agent")
    parser.add_argument("--run_id", default=None)
    args = parser.parse_args()
    admin = httpx.Client(base_url=args.gateway, headers={"Authorization": f"Bearer {args.admin_key}"}, timeout=60)
    rewards = []
    for task in tasks(args.split):
        for _ in range(args.attempts):
            session = (
                admin.post(
                    "/rl/start_session",
                    json={"task_id": task["task_id"], "experiment": args.experiment, "run_id": args.run_id},
                )
                .raise_for_status()
                .json()
            )
            client = OpenAI(base_url=f"{args.gateway}/v1", api_key=session["api_key"], timeout=300)
            reward = play(client, args.model, task, args.temperature)
            mine = {"Authorization": f"Bearer {session['api_key']}"}
            httpx.post(f"{args.gateway}/rl/set_reward", json={"reward": reward}, headers=mine).raise_for_status()
            httpx.post(f"{args.gateway}/rl/end_session", json={}, headers=mine).raise_for_status()
            rewards.append(reward)
    solved = sum(rewards)
    print(
        json.dumps(
            {
                "model": args.model,
                "split": args.split,
                "episodes": len(rewards),
                "solved": int(solved),
                "success": round(solved / len(rewards), 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
