"""Gateway sessions without a server: a session idle past the timeout is stored as expired (never dropped), a
reward names a completion or goes to the last, streamed tool-call pieces join into the call the client saw, and the
gateway takes out only what it asked vLLM for. The completions here are built by hand, in vLLM's reply shapes
(vllm/entrypoints/openai/chat_completion/protocol.py); the integration test (tests/integration/serve/
test_gateway.py) records real ones."""

from __future__ import annotations

import json
import time

import pytest

from loraloop.errors import ConfigError, SessionError
from loraloop.rollout.states import MemoryEpisodeStates
from loraloop.serve.gateway.recording import Completion, StreamedCompletion, completion_of, for_client
from loraloop.serve.gateway.sessions import Sessions
from loraloop.store import open_store
from loraloop.store.trajectories import parse_episode


def completion(n: int) -> Completion:
    return Completion(
        id=f"chatcmpl-{n}",
        model="m",
        content=f"reply {n}",
        prompt_token_ids=[1, 2, 3],
        completion_token_ids=[10 + n, 2],
        logprobs=[-0.5, -0.1],
        finish_reason="stop",
    )


def test_idle_sessions_are_stored_as_expired_and_rewards_find_their_completion(settings_for):
    settings = settings_for(gateway_session_timeout_s=0.2)
    store = open_store(settings=settings)
    sessions = Sessions(settings, store, MemoryEpisodeStates())
    started = sessions.start("t", experiment="exp", run_id="r")
    key = started["api_key"]
    messages = [{"role": "user", "content": "go"}]
    for n in range(3):
        sessions.record(key, completion(n), messages, {"temperature": 1.0}, None, 5.0)
    assert sessions.reward(key, 0.5, "chatcmpl-1")["interaction_id"] == "chatcmpl-1"
    assert sessions.reward(key, 1.0)["interaction_id"] == "chatcmpl-2"  # no id: the last completion
    with pytest.raises(SessionError, match="not a completion"):
        sessions.reward(key, 1.0, "chatcmpl-9")
    other = sessions.start("t", experiment="exp", run_id="r")
    assert sessions.expire() == []  # both just used
    time.sleep(0.3)
    assert sorted(sessions.expire()) == sorted([started["session_id"], other["session_id"]])
    episode = parse_episode(started["episode_key"], store.get_bytes(started["episode_key"]))
    assert episode.end.status == "expired" and episode.end.reward == 1.5 and episode.end.total_steps == 3
    assert [s.interaction_id for s in episode.steps] == ["chatcmpl-0", "chatcmpl-1", "chatcmpl-2"]
    assert [s.reward for s in episode.steps] == [0.0, 0.5, 1.0]
    with pytest.raises(SessionError) as ended:
        sessions.reward(key, 1.0)
    assert ended.value.status == 409
    with pytest.raises(SessionError) as unknown:
        sessions.open("sk-sess-never-issued")
    assert unknown.value.status == 401
    assert key not in json.dumps(store.get_bytes(started["episode_key"]).decode())  # the key is in no store


def test_a_refresh_stores_the_old_session_and_keeps_the_key(settings_for):
    settings = settings_for()
    store = open_store(settings=settings)
    sessions = Sessions(settings, store, MemoryEpisodeStates())
    first = sessions.start("t", run_id="r")
    sessions.record(first["api_key"], completion(0), [{"role": "user", "content": "a"}], {}, None, 1.0)
    second = sessions.start("t", run_id="r", api_key=first["api_key"])
    assert second["api_key"] == first["api_key"] and second["session_id"] != first["session_id"]
    stored = parse_episode(first["episode_key"], store.get_bytes(first["episode_key"]))
    assert stored.start.mode == "gateway" and len(stored.steps) == 1 and stored.end.status == "completed"
    assert second["episode_key"].endswith("t__attempt_1.jsonl")
    sessions.interrupt_all()  # a memory-mode gateway stopping: the open session is stored, not dropped
    last = parse_episode(second["episode_key"], store.get_bytes(second["episode_key"]))
    assert last.end.status == "interrupted" and sessions.count() == 0


def test_streamed_tool_call_pieces_join_and_the_client_gets_what_it_asked_for():
    chunks = [
        {
            "id": "c1",
            "model": "m",
            "prompt_token_ids": [5, 6],
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None}],
        },
        {
            "id": "c1",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "lookup", "arguments": ""},
                            }
                        ]
                    },
                    "logprobs": {"content": [{"token": "a", "logprob": -0.25}]},
                    "token_ids": [7],
                }
            ],
        },
        {
            "id": "c1",
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"item": "pens"}'}}]},
                    "logprobs": {"content": [{"token": "b", "logprob": -0.5}]},
                    "token_ids": [8],
                    "finish_reason": "tool_calls",
                }
            ],
        },
    ]
    streamed = StreamedCompletion()
    for chunk in chunks:
        streamed.add(chunk)
    got = streamed.completion
    assert got.tool_calls == [
        {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"item": "pens"}'}}
    ]
    assert json.loads(got.action) == {"name": "lookup", "arguments": {"item": "pens"}}
    assert (got.prompt_token_ids, got.completion_token_ids, got.logprobs) == ([5, 6], [7, 8], [-0.25, -0.5])
    assert got.finish_reason == "tool_calls"
    whole = {
        "id": "c2",
        "model": "m",
        "prompt_token_ids": [5, 6],
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": chunks[1]["choices"][0]["delta"]["tool_calls"],
                },
                "logprobs": {"content": [{"logprob": -1.0}]},
                "token_ids": [9],
                "finish_reason": "stop",
            }
        ],
    }
    assert completion_of(json.loads(json.dumps(whole))).tool_calls[0]["function"]["name"] == "lookup"
    plain = for_client(json.loads(json.dumps(whole)), {"messages": []})
    assert "prompt_token_ids" not in plain and "token_ids" not in plain["choices"][0]
    assert plain["choices"][0]["logprobs"] is None
    assert plain["choices"][0]["message"]["tool_calls"] == whole["choices"][0]["message"]["tool_calls"]
    asked = for_client(json.loads(json.dumps(whole)), {"logprobs": True, "return_token_ids": True})
    assert asked == whole  # a client that asked for them gets them as vLLM gave them


def test_rl_from_run_names_what_is_wrong(settings_for):
    from loraloop.rl_loop import check_config
    from loraloop.train.config import RLConfig

    settings = settings_for()
    with pytest.raises(ConfigError, match="MODE/RUN_ID"):
        check_config(RLConfig(base_model="m", dataset_path="", output_dir="o", from_run="gateway"), settings)
    with pytest.raises(ConfigError, match="no episodes under trajectories/gateway/none/"):
        check_config(RLConfig(base_model="m", dataset_path="", output_dir="o", from_run="gateway/none"), settings)


@pytest.mark.parametrize("with_logprobs", [0, 1, 2], ids=["none", "one of two", "both"])
def test_rl_from_run_refuses_a_run_without_sampling_logprobs(settings_for, with_logprobs):
    """Episodes whose model replies carry no token ids and sampling logprobs (a scripted policy's; a client's that
    bypassed the gateway) give RL nothing to take its ratio and importance weights against: a run of only such
    episodes is refused before a model is loaded, naming the run and an episode; one with some trainable episodes
    goes on (the others are counted as `no ids` in its iteration's row)."""
    from loraloop.rl_loop import check_config
    from loraloop.store import open_store
    from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
    from loraloop.store.trajectories import EpisodeRecorder
    from loraloop.train.config import RLConfig

    settings = settings_for()
    store = open_store(settings=settings)
    for attempt in range(2):
        record = EpisodeRecorder(store, "gateway", "s1", "t", attempt)
        record.add(EpisodeStart(task_id="t", mode="gateway", run_id="s1"))
        sampled = attempt < with_logprobs
        record.add(
            Step(
                step_idx=0,
                raw_output="ls",
                action_source="worker",  # the model's reply, as the gateway records it
                prompt_token_ids=[1, 2] if sampled else None,
                completion_token_ids=[3] if sampled else None,
                logprobs=[-0.5] if sampled else None,
            )
        )
        record.add(EpisodeEnd(success=True, reward=1.0, total_steps=1))
        record.flush()
    config = RLConfig(base_model="m", dataset_path="", output_dir="o", from_run="gateway/s1")
    if with_logprobs:
        check_config(config, settings)
    else:
        with pytest.raises(ConfigError, match=r"--from_run gateway/s1: none of its 2 episodes holds the token ids"):
            check_config(config, settings)
