"""tau2 episodes end to end: tau2's own gym, domains, user simulator and evaluator; loraloop's rollout path, store,
exports and Task Server. The user is a scripted OpenAI-compatible server (tests/helpers.scripted_user) or SmolLM2."""

from __future__ import annotations

import json

import pytest

from loraloop.datasets.export import export
from loraloop.envs.base import EnvOptions
from loraloop.kinds.registry import env_kind
from loraloop.rollout.episode import run_episode
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.service.local import LocalJobs
from loraloop.service.models import JobRequest
from loraloop.service.progress import follow
from loraloop.store import open_store
from loraloop.store.trajectories import iter_episodes, parse_episode
from loraloop.task_registry import load_registry
from loraloop.tasks.tau2.snapshot import write_snapshot
from tests.helpers import free_port, scripted_user

MOCK = "configs/tasks/tau2/mock_base.json"
ASK = "Hi. Please create a task called 'Important Meeting' for user_1."


def spec(
    registry: str,
    task_id: str,
    policy: str = "scripted",
    model: str | None = None,
    max_steps: int = 8,
    run_id: str = "r",
) -> EpisodeSpec:
    return EpisodeSpec(
        mode="tau2",
        run_id=run_id,
        task_registry=registry,
        task_id=task_id,
        task_index=0,
        attempt=0,
        seed=1,
        task_seed=1,
        temperature=0.0,
        policy=policy,
        model=model,
        max_steps=max_steps,
    )


def stored(settings, summary: dict):
    return parse_episode(summary.key, open_store(settings=settings).get_bytes(summary.key))


def play_with_scripted_user(
    settings_for, tmp_path, domain: str, split: str, task_id: str, lines: list, max_steps: int, solo: bool = False
):
    """The teacher plays one task of a fresh snapshot of `domain`/`split` with a scripted user saying `lines`:
    the run's summary, the stored episode and the requests the user got."""
    registry = tmp_path / f"{domain}_{split}.json"
    write_snapshot(domain, split, registry, solo=solo)
    with scripted_user(lines) as (url, requests):
        settings = settings_for(tau2_user_llm_base_url=url, tau2_user_llm="scripted-user")
        summary = run_episode(spec(str(registry), task_id, max_steps=max_steps), settings)
    return summary, stored(settings, summary), requests


def test_the_teacher_solves_mock_tasks_through_the_rollout_service_and_exports_read_them(settings_for, tmp_path):
    with scripted_user([ASK]) as (url, requests):
        settings = settings_for(tau2_user_llm_base_url=url, tau2_user_llm="scripted-user")
        jobs = LocalJobs(settings, concurrency=2)
        jobs.submit(JobRequest(experiment="teacher", task_registry=MOCK, run_id="teach"))
        status = follow(lambda: jobs.status("teach"), quiet=True)
    assert (status.state, status.done, status.failed) == ("done", 9, 0), status
    episodes = {e.start.task_id: e for e in iter_episodes(open_store(settings=settings), "trajectories/teacher/teach/")}
    solved = episodes["mock.create_task_1"]
    assert (solved.end.status, solved.end.reward, solved.end.success) == ("completed", 1.0, True)
    assert solved.start.env == "tau2" and "create_task" in solved.start.system_prompt  # the schemas, in the prompt
    assert solved.start.first_observation == f"user: {ASK}"
    user = solved.start.events[0]  # the user simulator's call, recorded apart from the agent's
    assert (user["type"], user["content"], user["model"], user["url"]) == ("user_turn", ASK, "scripted-user", url)
    call, stop = solved.steps
    assert json.loads(call.raw_output) == {
        "name": "create_task",
        "arguments": {"user_id": "user_1", "title": "Important Meeting"},
    }
    assert call.events[0]["type"] == "tool_result" and '"title": "Important Meeting"' in call.events[0]["content"]
    assert call.next_observation.startswith("tool: {") and stop.action_text == "tau2: done({})"
    assert stop.events[-1]["type"] == "evaluation" and stop.events[-1]["reward_breakdown"] == {
        "DB": 1.0,
        "COMMUNICATE": 1.0,
    }
    assert requests and "Important Meeting" in requests[0]["messages"][0]["content"]  # the scenario, to the user
    manifest = export(open_store(settings=settings), "trajectories/teacher/teach/", tmp_path / "data", ["bc"])
    rows = [json.loads(line) for line in (tmp_path / "data" / "bc.jsonl").read_text().splitlines()]
    assert manifest["rows"]["bc"] == len(rows) > 0
    assert any(json.loads(row["completion"][0]["content"])["name"] == "create_task" for row in rows)


def test_a_wrong_agent_gets_0_and_a_call_to_an_unknown_tool_is_an_error_observation(settings_for):
    task = load_registry(MOCK).get("create_task_1")
    with scripted_user([ASK]) as (url, _):
        env = env_kind("tau2").envs.make_env(task, settings_for(tau2_user_llm_base_url=url), EnvOptions(max_steps=6))
        try:
            env.reset()
            unknown = env.step('{"name": "delete_task", "arguments": {"task_id": "task_1"}}')
            assert unknown.observation.startswith("error: unknown tool 'delete_task' (tools: create_task, done,")
            assert not unknown.done and unknown.info.action_kind == "invalid"
            env.step('{"name": "create_task", "arguments": {"user_id": "user_1", "title": "Unimportant"}}')
            end = env.step('{"name": "done", "arguments": {}}')
        finally:
            env.close()
    assert (end.done, end.reward, end.info.success) == (True, 0.0, False)
    assert end.info.events[-1]["db_check"]["db_match"] is False  # tau2's evaluator compared the databases


def test_a_preempted_agent_thread_still_gives_reset_and_step_their_own_observation(settings_for, monkeypatch):
    """tau2's gym returns as soon as its agent thread starts a turn, before that thread has set the turn's
    observation: on a loaded machine an episode began with an empty observation (seen in the suite). Fault
    injection, since preemption cannot be caused on demand: tau2's agent thread is slowed where it copies the
    observation (its own deepcopy, 0.3 s later), which widens that window to certain. Reset must still give the
    user's message, and a step the result of its own call, not the turn's before."""
    import time

    import tau2.gym.gym_agent as gym_agent

    copy = gym_agent.deepcopy
    monkeypatch.setattr(gym_agent, "deepcopy", lambda value: (time.sleep(0.3), copy(value))[1])
    task = load_registry(MOCK).get("create_task_1")
    with scripted_user([ASK]) as (url, _):
        env = env_kind("tau2").envs.make_env(task, settings_for(tau2_user_llm_base_url=url), EnvOptions(max_steps=6))
        try:
            first, _ = env.reset()
            made = env.step('{"name": "create_task", "arguments": {"user_id": "user_1", "title": "Important Meeting"}}')
        finally:
            env.close()
    assert first == f"user: {ASK}"
    assert "Important Meeting" in made.observation and made.observation != first, made.observation


def test_an_airline_episode_with_a_scripted_user(settings_for, tmp_path):
    lines = ["Hi, I need to change my reservation.", "Thank you, that is all. ###STOP###"]
    summary, episode, requests = play_with_scripted_user(
        settings_for, tmp_path, "airline", "train", "7", lines, max_steps=12
    )  # 5 calls, a message, done
    assert (summary.status, summary.reward, summary.success) == ("completed", 1.0, True)
    assert [s.action for s in episode.steps] == ["tool"] * 5 + ["message"]  # the user stopped after the message
    said = episode.steps[-1]
    assert [e["content"] for e in said.events if e["type"] == "user_turn"] == [lines[1]] and len(requests) == 2
    assert said.events[-1]["termination_reason"] == "user_stop"


def test_a_retail_episode_with_a_scripted_user(settings_for, tmp_path):
    lines = ["Hi, I need help with my order.", "Thank you, that is all. ###STOP###"]
    summary, episode, _ = play_with_scripted_user(settings_for, tmp_path, "retail", "train", "0", lines, max_steps=12)
    assert (summary.status, summary.reward, summary.success) == ("completed", 1.0, True)
    assert episode.start.category == "retail" and "retail" in episode.start.system_prompt.lower()
    assert [e["type"] for e in episode.steps[0].events] == ["tool_result"]


# A telecom fault is fixed on the user's phone (user tools): tau2 grades the phone's state (env assertions). Played
# with a user who makes the call asked for, with one who does not, and in solo mode, where the agent makes it.
TELECOM = "telecom.[mobile_data_issue]user_abroad_roaming_enabled_off[PERSONA:None]"


@pytest.mark.parametrize(
    "solo, user, reward",
    [
        (False, ["My phone shows No Service in France.", {"name": "toggle_roaming"}, "It works now. ###STOP###"], 1.0),
        (False, ["My phone shows No Service in France.", "I will not touch my phone. ###STOP###"], 0.0),
        (True, ["(no user in solo mode)"], 1.0),
    ],
    ids=["user-fixes-phone", "user-refuses", "solo"],
)
def test_telecom_episodes_are_graded_on_the_users_phone(settings_for, tmp_path, solo, user, reward):
    summary, episode, requests = play_with_scripted_user(
        settings_for, tmp_path, "telecom", "small", TELECOM, user, max_steps=6, solo=solo
    )
    assert (summary.status, summary.reward) == ("completed", reward)
    assert episode.steps[-1].events[-1]["type"] == "evaluation"
    if solo:  # the agent called the phone's tool itself; no user was asked
        assert json.loads(episode.steps[0].raw_output)["name"] == "toggle_roaming" and not requests
    else:  # the agent asked; what the user did is recorded apart from the agent's turns
        said = [e for e in episode.steps[0].events if e["type"] == "user_turn"]
        assert "toggle_roaming" in episode.steps[0].raw_output
        assert bool(said[0].get("tool_calls")) == (reward == 1.0)


def test_an_unreachable_user_simulator_ends_the_episode_as_a_service_error_and_it_is_stored(settings_for):
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    settings = settings_for(tau2_user_llm_base_url=down, model_retries=0)
    summary = run_episode(spec(MOCK, "create_task_1"), settings, last_try=True)
    assert summary.status == "service_error" and f"tau2 user simulator unreachable at {down}" in summary.error
    assert stored(settings, summary).end.status == "service_error"
    replay = run_episode(spec(MOCK, "create_task_1", run_id="again"), settings, last_try=False)
    assert replay.retry is True  # a server's fault: the runner plays it again, unstored


def test_smollm2_as_agent_and_user_on_a_mock_task(settings_for, vllm_url):
    settings = settings_for(vllm_url=vllm_url, max_tokens=24)  # the default user: the stack's vLLM, the base model
    summary = run_episode(spec(MOCK, "create_task_1", policy="openai", max_steps=2), settings)
    episode = stored(settings, summary)
    user = episode.start.events[0]
    assert (user["type"], user["model"], user["url"]) == ("user_turn", settings.base_model_name, vllm_url)
    assert summary.status in ("completed", "round_limit") and episode.steps[-1].model == settings.base_model_name
    evaluation = episode.steps[-1].events[-1]  # tau2's evaluator graded the episode, however it ended
    assert evaluation["type"] == "evaluation" and evaluation["reward"] == summary.reward


def test_an_evaluator_that_raises_on_what_the_agent_left_grades_the_episode_0(settings_for):
    task = load_registry(MOCK).get("create_task_1_with_env_assertions")  # asserts on a task the agent never made
    with scripted_user([ASK]) as (url, _):
        env = env_kind("tau2").envs.make_env(task, settings_for(tau2_user_llm_base_url=url), EnvOptions(max_steps=4))
        try:
            env.reset()
            end = env.step('{"name": "done", "arguments": {}}')
        finally:
            env.close()
    assert (end.done, end.reward, end.info.status) == (True, 0.0, "completed")
    assert end.info.events[-1]["error"] == "ValueError: Task task_2 not found"
