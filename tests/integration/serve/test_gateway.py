"""The recording gateway (`loraloop serve gateway`) in front of a real vLLM CPU (SmolLM2), sessions in a real Redis,
episodes in a file store: token-exact records, streamed and whole calls alike, concurrent sessions apart, the
episodes the RL batch and the BC export take, bad input refused without losing a recorded call, and a gateway
killed (`kill -9`) mid-session that loses no completed call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

from loraloop.store import open_store
from loraloop.store.trajectories import iter_episodes, parse_episode, run_prefix
from tests.helpers import MODEL, free_port, wait_port

ADMIN = "test-admin-key-0123456789"
BASE = "SmolLM2-135M-Instruct"
MAX_BODY = 65536


class Gateway:
    """A `loraloop serve gateway` process over the test's vLLM, Redis and file store; it can be killed and restarted."""

    def __init__(self, vllm_url: str, redis_url: str, store: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.store_url = f"file://{store}"
        self.env = {
            **os.environ,
            "LORALOOP_VLLM_URL": vllm_url,
            "LORALOOP_BROKER_URL": redis_url,
            "LORALOOP_STORE_URL": self.store_url,
            "LORALOOP_GATEWAY_ADMIN_KEY": ADMIN,
            "LORALOOP_GATEWAY_MAX_BODY_BYTES": str(MAX_BODY),
            "LORALOOP_BASE_MODEL_NAME": BASE,
        }
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loraloop.cli", "serve", "gateway", "--port", str(self.port)],
            env=self.env,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, 60)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def session(self, task_id: str, **extra) -> dict:
        reply = httpx.post(
            f"{self.url}/rl/start_session",
            json={"task_id": task_id, **extra},
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=30,
        )
        assert reply.status_code == 200, reply.text
        return reply.json()

    def rl(self, path: str, key: str, body: dict) -> httpx.Response:
        return httpx.post(f"{self.url}/rl/{path}", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)

    def client(self, key: str) -> OpenAI:
        return OpenAI(base_url=f"{self.url}/v1", api_key=key, timeout=300, max_retries=0)

    def episode(self, key: str):
        store = open_store(self.store_url)
        return parse_episode(key, store.get_bytes(key))


@pytest.fixture(scope="module")
def gateway(vllm_url, redis_url, tmp_path_factory):
    gw = Gateway(vllm_url, redis_url, tmp_path_factory.mktemp("gateway") / "store")
    gw.start()
    yield gw
    gw.proc.terminate()
    gw.proc.wait(timeout=30)


def test_calls_are_recorded_token_exact_streamed_or_whole(gateway):
    from transformers import AutoTokenizer

    session = gateway.session("colours", experiment="byo", run_id="exact")
    client = gateway.client(session["api_key"])
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name three colours."}]
    whole = client.chat.completions.create(model=BASE, messages=messages, max_tokens=24, temperature=0, seed=3)
    chunks = list(
        client.chat.completions.create(model=BASE, messages=messages, max_tokens=24, temperature=0, seed=3, stream=True)
    )
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    said = whole.choices[0].message.content
    assert said and said == streamed
    # the client gets vLLM's reply as it would without the gateway: no logprobs or token ids it did not ask for
    assert whole.choices[0].logprobs is None and "prompt_token_ids" not in (whole.model_extra or {})
    assert all(c.choices[0].logprobs is None for c in chunks if c.choices)
    assert gateway.rl("set_reward", session["api_key"], {"reward": 0.25, "interaction_id": whole.id}).status_code == 200
    assert gateway.rl("set_reward", session["api_key"], {"reward": 1.0}).json()["interaction_id"] == chunks[0].id
    ended = gateway.rl("end_session", session["api_key"], {})
    assert ended.status_code == 200 and ended.json()["stored"] is True
    assert ended.json()["episode_key"] == session["episode_key"] == "trajectories/byo/exact/colours__attempt_0.jsonl"

    episode = gateway.episode(session["episode_key"])
    assert (episode.start.policy, episode.start.mode, episode.start.task_id) == ("gateway", "byo", "colours")
    assert (episode.end.status, episode.end.reward, episode.end.success) == ("completed", 1.25, True)
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    first, second = episode.steps
    for step, got in ((first, said), (second, streamed)):
        assert tokenizer.decode(step.completion_token_ids, skip_special_tokens=True) == got == step.raw_output
        assert len(step.logprobs) == len(step.completion_token_ids) == step.completion_tokens
        assert step.messages == messages and step.action_source == "worker" and step.model == BASE
        assert step.sampling == {"max_tokens": 24, "temperature": 0, "seed": 3} and step.adapter is None
    assert (first.interaction_id, second.interaction_id) == (whole.id, chunks[0].id)
    assert first.prompt_token_ids == second.prompt_token_ids
    assert (
        tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True)[
            "input_ids"
        ]
        == first.prompt_token_ids
    )
    assert first.completion_token_ids == second.completion_token_ids
    assert first.logprobs == pytest.approx(second.logprobs, abs=1e-3)
    assert [first.reward, second.reward] == [0.25, 1.0]


def test_concurrent_sessions_stay_apart_and_train(gateway, tmp_path):
    from loraloop.datasets.export import export
    from loraloop.train.rl_batch import build_batch

    words = ["apple", "river", "candle", "tiger", "violet", "hammer"]
    results: dict[str, dict] = {}

    def agent(word: str, task: str, reward: float) -> None:
        session = gateway.session(task, experiment="byo", run_id="together")
        client = gateway.client(session["api_key"])
        messages = [{"role": "user", "content": f"Repeat the word {word}."}]
        for turn in range(2):
            reply = client.chat.completions.create(
                model=BASE, messages=messages, max_tokens=12, temperature=1.0, seed=turn, stream=turn == 1
            )
            text = (
                reply.choices[0].message.content
                if turn == 0
                else "".join(c.choices[0].delta.content or "" for c in reply if c.choices)
            )
            messages = messages + [
                {"role": "assistant", "content": text},
                {"role": "user", "content": f"Again: {word}."},
            ]
        assert gateway.rl("set_reward", session["api_key"], {"reward": reward}).status_code == 200
        results[word] = gateway.rl("end_session", session["api_key"], {}).json()

    tasks = [(word, f"repeat-{i % 2}", float(i < 2)) for i, word in enumerate(words)]  # both tasks: rewards 1 and 0
    threads = [threading.Thread(target=agent, args=task) for task in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert sorted(results) == sorted(words)
    for word, ended in results.items():
        episode = gateway.episode(ended["episode_key"])
        assert len(episode.steps) == 2
        sent = [m["content"] for step in episode.steps for m in step.messages if m["role"] == "user"]
        assert sent and all(word in text and not any(w in text for w in words if w != word) for text in sent)
    store = open_store(gateway.store_url)
    episodes = list(iter_episodes(store, run_prefix("byo", "together")))
    assert len(episodes) == 6 and {e.start.attempt_idx for e in episodes} == {0, 1, 2}
    rows, stats = build_batch(episodes, version=0, max_staleness=0, scale_rewards=True, max_length=2048)
    assert stats.trained_episodes == 6 and stats.no_token_ids == 0 and rows
    by_key = {e.key: e for e in episodes}
    first = by_key[results["apple"]["episode_key"]].steps[0]
    assert any(
        r.input_ids[: len(first.prompt_token_ids) + len(first.completion_token_ids)]
        == first.prompt_token_ids + first.completion_token_ids
        for r in rows
    )
    manifest = export(store, run_prefix("byo", "together").rstrip("/"), tmp_path, ["bc"])
    assert manifest["episodes"] == 6 and manifest["successful_episodes"] == 2 and manifest["rows"]["bc"] == 4
    bc = [__import__("json").loads(line) for line in (tmp_path / "bc.jsonl").read_text().splitlines()]
    recorded = [step.messages for e in episodes if e.success for step in e.steps]
    assert sorted(map(str, (row["prompt"] for row in bc))) == sorted(map(str, recorded))


def test_an_agent_of_ones_own_plays_miniwob_through_the_task_server_and_the_gateway(
    gateway, redis_url, chromium, settings_for
):
    """Issue 28 item 1's gateway, AReaL's online mode on a public benchmark: an agent's own loop takes MiniWoB++'s
    pages from the Task Server (the browsergym kind) and asks the model through the gateway; MiniWoB's own reward
    becomes the session's, and the stored session holds every call token-exact (what `train rl --from_run` takes)."""
    from fastapi.testclient import TestClient

    from loraloop.task_registry import load_registry
    from loraloop.taskserver.app import create_app, open_states

    registry = load_registry("configs/tasks/miniwob")
    task = registry.get("train-miniwob.click-button")
    settings = settings_for(broker_url=redis_url)
    app = create_app(registry, "byo-miniwob", settings, run_id="mw", states=open_states(settings, "byo-miniwob"))
    session = gateway.session(task.index, experiment="byo-miniwob", run_id="mw")
    client = gateway.client(session["api_key"])
    with TestClient(app) as env:
        start = env.post("/api/episode/start", json={"sample_id": task.index, "config": {"seed": 0}})
        assert start.status_code == 200, start.text
        first = start.json()["observation"]["content"]  # the prompt as loraloop builds it: system and the page
        messages, calls, reply = first, 0, None
        assert "# Accessibility tree" in messages[-1]["content"]
        for _ in range(2):
            text = client.chat.completions.create(model=BASE, messages=messages, max_tokens=24, temperature=1.0)
            answer = text.choices[0].message.content or ""
            calls += 1
            reply = env.post(
                "/api/episode/step", json={"episode_id": start.json()["episode_id"], "action": {"content": answer}}
            ).json()
            if reply["done"]:
                break
            page = {"role": "user", "content": reply["observation"]["content"]}
            messages = [*messages, {"role": "assistant", "content": answer}, page]
    assert gateway.rl("set_reward", session["api_key"], {"reward": reply["reward"]}).status_code == 200
    ended = gateway.rl("end_session", session["api_key"], {}).json()
    assert ended["steps"] == calls and ended["reward"] == reply["reward"]
    episode = gateway.episode(ended["episode_key"])
    for step in episode.steps:
        assert step.prompt_token_ids and len(step.logprobs) == len(step.completion_token_ids) > 0
    assert episode.steps[0].messages == first  # what the agent sent: the Task Server's first observation
    [played] = iter_episodes(open_store(settings=settings), "trajectories/byo-miniwob/mw/")  # the env's own record
    assert played.start.env == "browsergym" and played.start.events[0]["seed"] == 0 and len(played.steps) == calls


def test_bad_input_is_refused_and_loses_no_recorded_call(gateway):
    session = gateway.session("bad", experiment="byo", run_id="bad")
    key = session["api_key"]
    client = gateway.client(key)
    said = (
        client.chat.completions.create(
            model=BASE, messages=[{"role": "user", "content": "Hi"}], max_tokens=8, temperature=0
        )
        .choices[0]
        .message.content
    )
    chat = f"{gateway.url}/v1/chat/completions"
    mine = {"Authorization": f"Bearer {key}"}

    def post(body=None, headers=mine, content=None):
        return httpx.post(chat, json=body, content=content, headers=headers, timeout=60)

    wrong = post({"model": BASE, "messages": [{"role": "user", "content": "x"}]}, {"Authorization": "Bearer sk-nope"})
    assert wrong.status_code == 401 and "invalid API key" in wrong.json()["error"]["message"]
    assert post({"model": BASE, "messages": []}, {}).status_code == 401
    assert (
        httpx.post(
            f"{gateway.url}/rl/start_session",
            json={"task_id": "x"},
            timeout=30,
            headers={"Authorization": f"Bearer {key}"},
        ).status_code
        == 401
    )  # a session key is not admin
    assert gateway.rl("set_reward", "sk-sess-unknown-key-000", {"reward": 1}).status_code == 401
    assert gateway.rl("end_session", "sk-sess-unknown-key-000", {}).status_code == 401
    unknown = post({"model": "nope-v9", "messages": [{"role": "user", "content": "x"}]})
    assert unknown.status_code == 404 and "'nope-v9' is not served" in unknown.json()["error"]["message"]
    assert BASE in unknown.json()["error"]["message"]
    assert post(content=b"{not json", headers={**mine, "Content-Type": "application/json"}).status_code == 400
    assert "field 'messages'" in post({"model": BASE, "messages": "hi"}).json()["error"]["message"]
    assert "n must be 1" in post({"model": BASE, "messages": [{"role": "user", "content": "x"}], "n": 2}).text
    big = post({"model": BASE, "messages": [{"role": "user", "content": "x" * MAX_BODY}]})
    assert big.status_code == 413 and "LORALOOP_GATEWAY_MAX_BODY_BYTES" in big.text
    too_long = post({"model": BASE, "messages": [{"role": "user", "content": "x"}], "max_tokens": 100000})
    assert too_long.status_code == 400  # vLLM's own refusal, passed on
    assert gateway.rl("set_reward", key, {"reward": "high"}).status_code == 422
    assert gateway.rl("set_reward", key, {"reward": 1, "interaction_id": "chatcmpl-none"}).status_code == 404
    assert gateway.rl("set_reward", key, {"reward": 1}).status_code == 200
    ended = gateway.rl("end_session", key, {})
    assert ended.status_code == 200
    late = gateway.rl("set_reward", key, {"reward": 0})
    assert late.status_code == 409 and "has ended" in late.json()["detail"]
    assert gateway.rl("end_session", key, {}).status_code == 409
    episode = gateway.episode(ended.json()["episode_key"])
    assert [s.raw_output for s in episode.steps] == [said] and episode.end.reward == 1.0  # only the good call


def test_a_gateway_killed_mid_session_loses_no_completed_call(gateway):
    session = gateway.session("restart", experiment="byo", run_id="restart")
    ask = [{"role": "user", "content": "Count to three."}]
    before = gateway.client(session["api_key"]).chat.completions.create(
        model=BASE, messages=ask, max_tokens=10, temperature=0
    )
    gateway.kill()  # kill -9: nothing runs at shutdown; the session lives in Redis
    gateway.start()
    after = gateway.client(session["api_key"]).chat.completions.create(
        model=BASE, messages=ask, max_tokens=10, temperature=0
    )
    assert gateway.rl("set_reward", session["api_key"], {"reward": 1}).status_code == 200
    ended = gateway.rl("end_session", session["api_key"], {}).json()
    episode = gateway.episode(ended["episode_key"])
    assert [s.interaction_id for s in episode.steps] == [before.id, after.id]
    assert [s.raw_output for s in episode.steps] == [
        before.choices[0].message.content,
        after.choices[0].message.content,
    ]


LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look an item up in the stock room.",
        "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]},
    },
}


def test_tool_calls_pass_through_unchanged_and_are_recorded(gateway, vllm_url):
    """A named tool choice makes vLLM answer with a tool call without a tool-call parser (structured output): the
    client gets the same call through the gateway as from vLLM itself, whole and streamed, and the step records it."""
    import json

    session = gateway.session("stock", experiment="byo", run_id="tools")
    through = gateway.client(session["api_key"])
    direct = OpenAI(base_url=vllm_url, api_key="EMPTY", timeout=300, max_retries=0)
    ask = {
        "model": BASE,
        "messages": [{"role": "user", "content": "How many apples are in stock?"}],
        "tools": [LOOKUP],
        "tool_choice": {"type": "function", "function": {"name": "lookup"}},
        "max_tokens": 80,
        "temperature": 0,
        "seed": 5,
    }

    def calls(client, stream: bool) -> list[tuple[str, str]]:
        if not stream:
            return [
                (c.function.name, c.function.arguments)
                for c in client.chat.completions.create(**ask).choices[0].message.tool_calls
            ]
        pieces: dict[int, list[str]] = {}
        for chunk in client.chat.completions.create(**ask, stream=True):
            for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
                name, args = pieces.setdefault(call.index, ["", ""])
                pieces[call.index] = [name + (call.function.name or ""), args + (call.function.arguments or "")]
        return [tuple(pieces[i]) for i in sorted(pieces)]

    for stream in (False, True):
        got = calls(through, stream)
        assert got == calls(direct, stream) and got[0][0] == "lookup"  # SmolLM2's arguments: whatever it wrote
    assert gateway.rl("end_session", session["api_key"], {}).status_code == 200
    whole, streamed = gateway.episode(session["episode_key"]).steps
    recorded = json.loads(whole.raw_output)
    assert recorded["name"] == "lookup" and recorded == json.loads(streamed.raw_output)
    assert whole.completion_token_ids == streamed.completion_token_ids and whole.completion_token_ids
