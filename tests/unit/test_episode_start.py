"""The start record is built once, whole: from the task, the driver's Provenance and what the reset returned; a reset
that fails still leaves a start record (what was attempted), and a resumed session keeps its provenance."""

import time

import pytest
from pydantic import ValidationError

from loraloop.errors import EnvironmentFailure
from loraloop.replies import Reply
from loraloop.rollout.session import EpisodeSession
from loraloop.store.backends import FileStore
from loraloop.store.records import EpisodeStart, HaloStep, Provenance, Step
from loraloop.store.trajectories import parse_episode
from tests.unit.test_halo_agent import ANSWER, TASK, TextShell

LS = "Act: bash\n```bash\nls\n```"


class BrokenShell(TextShell):
    """A shell whose reset fails, as a container that cannot start."""

    def reset(self, *, seed=None, options=None):
        raise EnvironmentFailure("the container did not start")


def test_the_start_record_is_written_once_with_the_reset_and_the_provenance_whole(tmp_path):
    store = FileStore(tmp_path)
    provenance = Provenance(policy="openai", worker_model="m", max_steps=5, sampling={"temperature": 0.7})
    before = time.time()
    session = EpisodeSession(store, TextShell(), TASK, mode="m", run_id="r", attempt=0, seed=3, provenance=provenance)
    session.start()
    [start] = session.recorder.records
    assert isinstance(start, EpisodeStart)
    assert (start.first_observation, start.expected, start.seed) == ("Task: count", "3", 3)
    assert (start.policy, start.worker_model, start.max_steps, start.sampling) == (
        "openai",
        "m",
        5,
        {"temperature": 0.7},
    )
    assert start.timestamp == session.started and before <= start.timestamp <= time.time()
    session.act(ANSWER, source="worker")
    assert session.finish()
    assert parse_episode(session.key, store.get_bytes(session.key)).start == start  # stored as built


def test_a_failed_reset_leaves_the_start_record_of_what_was_attempted(tmp_path):
    store = FileStore(tmp_path)
    session = EpisodeSession(
        store, BrokenShell(), TASK, mode="m", run_id="r", attempt=0, provenance=Provenance(policy="x")
    )
    with pytest.raises(EnvironmentFailure):
        session.start()
    assert session.finish("env_error", "the container did not start")
    episode = parse_episode(session.key, store.get_bytes(session.key))
    start, end = episode.start, episode.end
    assert (start.type, start.task_id, start.policy, start.first_observation) == (
        "episode_start",
        TASK.index,
        "x",
        None,
    )
    assert (end.status, end.error) == ("env_error", "the container did not start")


def test_undeclared_provenance_is_refused_naming_the_field():
    with pytest.raises(ValidationError, match="worker_modle"):
        Provenance(worker_modle="m")


def test_a_step_records_the_reply_that_chose_it_and_halos_part(tmp_path):
    """The reply's model fields go into the step as they are (no dict in between); a step no model chose has none,
    and a step HALO took no part in has no halo."""
    session = EpisodeSession(FileStore(tmp_path), TextShell(), TASK, mode="m", run_id="r", attempt=0)
    session.start()
    reply = Reply(LS, "worker", "m", 12.34, 7, [1, 2], [3], [-0.5], {"temperature": 1.0})
    session.act(LS, source="worker", reply=reply)
    session.act(LS, source="cache", halo=HaloStep(cache_hit=True, cache_event="hit"))
    worker, cached = session.recorder.records[1:]
    assert isinstance(worker, Step) and isinstance(cached, Step)
    assert (worker.model, worker.model_latency_ms, worker.completion_tokens) == ("m", 12.3, 7)
    assert (worker.prompt_token_ids, worker.completion_token_ids, worker.logprobs) == ([1, 2], [3], [-0.5])
    assert worker.halo is None and session.last_step is cached
    assert (cached.model, cached.completion_token_ids, cached.halo) == (
        None,
        None,
        HaloStep(cache_hit=True, cache_event="hit"),
    )
    unsampled = reply.unsampled()
    assert (unsampled.model, unsampled.completion_tokens, unsampled.completion_token_ids, unsampled.logprobs) == (
        "m",
        7,
        None,
        None,
    )


def test_a_resumed_session_keeps_its_provenance(tmp_path):
    """A Task Server replica resuming an episode still knows its round limit: a reply that never reaches the env
    (a note) cuts the episode at max_steps there too."""
    store = FileStore(tmp_path)
    session = EpisodeSession(
        store, TextShell(), TASK, mode="m", run_id="r", attempt=0, provenance=Provenance(max_steps=2)
    )
    session.start()
    session.act(LS, source="worker")
    resumed = EpisodeSession.resume(store, TextShell(), TASK, session.snapshot())
    assert resumed.provenance == Provenance(max_steps=2)
    resumed.note("bad()", "no such macro", source="worker")
    assert resumed.last_step is not None and resumed.last_step.truncated and resumed.last_step.done
