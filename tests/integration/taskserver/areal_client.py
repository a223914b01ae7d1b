"""A client that makes exactly the calls AReaL's TaskServerWorkflow makes (../shared/SPECS.md §1).

One aiohttp session per call with a total timeout, `sample_id` taken from the row's `task_id`
or `index`, observations turned into chat history (`messages` replaces it, `text` appends a
user turn), and the episode cancelled on any exception. `base_urls` is a list: each call goes
to the next URL in turn, as a round-robin load balancer in front of replicas would send it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable

import aiohttp

Messages = list[dict[str, str]]


class TaskServerClient:
    """The workflow's HTTP side; `policy(messages)` plays the model."""

    def __init__(self, base_urls: list[str], timeout: float = 120.0, headers: dict[str, str] | None = None) -> None:
        self._urls = itertools.cycle(base_urls)
        self.timeout = timeout
        self.headers = headers or {}  # a subclass's custom headers: `Authorization: Bearer <the server's token>`

    async def _post(self, path: str, body: dict) -> dict:
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.timeout), headers=self.headers
        ) as session:
            async with session.post(f"{next(self._urls)}/api{path}", json=body) as resp:
                if resp.status >= 400:
                    raise RuntimeError(f"{path}: HTTP {resp.status}: {await resp.text()}")
                return await resp.json()

    async def run_episode(self, row: dict, policy: Callable[[Messages], Awaitable[str]]) -> dict:
        """Play one dataset row to the end; return the final step's reward and info."""
        sample_id = row.get("task_id") or row.get("index")
        start = await self._post("/episode/start", {"sample_id": sample_id, "config": {}})
        episode_id = start["episode_id"]
        try:
            history: Messages = self.to_messages(start["observation"], list(row.get("messages", [])))
            for _ in range(start["info"]["max_turns"]):
                action = await policy(history)
                history.append({"role": "assistant", "content": action})
                step = await self._post(
                    "/episode/step", {"episode_id": episode_id, "action": {"type": "text", "content": action}}
                )
                if step["done"]:
                    return {
                        "sample_id": sample_id,
                        "reward": step["reward"],
                        "info": step["info"],
                        "episode_id": episode_id,
                    }
                history = self.to_messages(step["observation"], history)
            raise RuntimeError(f"{sample_id}: no end after {start['info']['max_turns']} turns")
        except BaseException:
            await self._post("/episode/cancel", {"episode_id": episode_id})
            raise

    @staticmethod
    def to_messages(observation: dict | None, history: Messages) -> Messages:
        """`messages` replaces the history, `text` appends a user message."""
        if observation is None:
            return history
        if observation["type"] == "messages":
            return list(observation["content"])
        return history + [{"role": "user", "content": observation["content"]}]

    async def run_dataset(self, rows: list[dict], policy_for: Callable[[dict], Callable], concurrency: int = 4):
        """Run every row, `concurrency` episodes at once, as the workflow's rollout batch does."""
        gate = asyncio.Semaphore(concurrency)

        async def one(row: dict) -> dict:
            async with gate:
                return await self.run_episode(row, policy_for(row))

        return await asyncio.gather(*(one(row) for row in rows))
