"""The request guards both APIs share, the job book's resubmission rules and the Task Server's memory states,
without a broker: what hostile input gets, and what stays behind."""

import math
import time

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from loraloop import http_guards
from loraloop.errors import TaskFormatError
from loraloop.http_guards import RequestBody
from loraloop.rollout.states import MemoryEpisodeStates
from loraloop.rollout.summary import EpisodeSummary
from loraloop.service.book import JobRunning, MemoryBook


class Body(RequestBody):
    name: str
    tags: dict = {}


def guarded_app(max_bytes=2048):
    app = FastAPI()

    @app.post("/echo")
    def echo(body: Body) -> dict:
        return {"name": body.name}

    http_guards.install(app, max_bytes)
    return TestClient(app)


def post(client, text: bytes, **headers):
    return client.post("/echo", content=text, headers={"Content-Type": "application/json", **headers})


def test_lone_surrogates_and_non_finite_numbers_are_named_with_their_field():
    client = guarded_app()
    assert post(client, b'{"name": "ok"}').json() == {"name": "ok"}
    lone = post(client, b'{"name": "a\\udfffb"}')
    assert lone.status_code == 422 and "name: character 1 is a lone surrogate (\\\\udfff)" in lone.text
    nested = post(client, b'{"name": "x", "tags": {"k": [1, {"deep": -Infinity}]}}')
    assert nested.status_code == 422 and "tags.k[1].deep: -inf is not a number JSON allows" in nested.text
    key = post(client, b'{"name": "x", "tags": {"\\ud83d": 1}}')
    assert key.status_code == 422 and "(the key)" in key.text


def test_validation_errors_never_echo_the_input():
    reply = post(guarded_app(), b'{"name": NaN}')  # FastAPI's own handler echoes NaN and fails with a 500
    assert reply.status_code == 422 and "NaN" not in reply.text
    typed = post(guarded_app(), b'{"name": 12}')
    assert typed.json()["detail"] == [
        {"type": "string_type", "loc": ["body", "name"], "msg": "Input should be a valid string"}
    ]


def test_bodies_over_the_cap_get_413_declared_or_streamed():
    client = guarded_app(max_bytes=2048)
    assert post(client, b'{"name": "' + b"x" * 3000 + b'"}').status_code == 413
    chunks = iter([b'{"name": "', b"x" * 1500, b"x" * 1500, b'"}'])  # no Content-Length: counted as it comes
    assert client.post("/echo", content=chunks, headers={"Content-Type": "application/json"}).status_code == 413
    assert client.post(
        "/echo", content=iter([b'{"name": ', b'"ok"}']), headers={"Content-Type": "application/json"}
    ).json() == {"name": "ok"}


def test_printable_values():
    assert http_guards.printable("a\ud800") == "a\\ud800" and http_guards.printable(math.nan) == "nan"
    assert http_guards.printable(3) == 3


def test_a_binary_task_file_is_named_not_a_traceback(tmp_path):
    from loraloop.task_registry import load_registry

    path = tmp_path / "tasks.json"
    path.write_bytes(b"\x80\x81" * 100)
    with pytest.raises(TaskFormatError, match=r"tasks.json: not UTF-8 text \(byte 0: 0x80\)"):
        load_registry(path)
    (tmp_path / "registry.yaml").write_bytes(b"sets: \xff\xfe")
    with pytest.raises(TaskFormatError, match="registry.yaml: not UTF-8 text"):
        load_registry(tmp_path)


def test_the_memory_book_refuses_a_running_run_and_keeps_an_ended_one():
    book = MemoryBook()
    book.create("r", "teacher", None, ["k1", "k2"], skipped=0)
    with pytest.raises(JobRunning, match=r"job 'r' is still running \(0/2 done\)"):
        book.create("r", "teacher", None, ["k1", "k2"], skipped=0)
    assert book.record("r", EpisodeSummary(task_id="t1", attempt=0, status="completed", success=True)) is False
    assert book.record("r", EpisodeSummary(task_id="t1", attempt=0, status="completed", success=True)) is False
    assert book.status("r").done == 1  # a redelivered episode is counted once
    assert book.record("r", EpisodeSummary(task_id="t2", attempt=0, status="service_error", error="down")) is True
    assert book.status("r").failures == {"service_error": 1}
    ended = book.status("r")
    book.create("r", "teacher", None, [], skipped=2)  # nothing left to play: the book stays as it was
    assert book.status("r") == ended and (ended.done, ended.total, ended.solved, ended.failed) == (2, 2, 1, 1)
    assert book.cancel("r") == [] and book.status("r").state == "done"
    book.create("s", "teacher", None, ["k"], skipped=0)
    assert book.cancel("s") == ["k"] and book.status("s").state == "cancelled"
    book.create("s", "teacher", None, ["k"], skipped=0)  # a cancelled run may go on
    assert book.status("s").state == "queued"


def test_calls_naming_unknown_episodes_leave_nothing_in_memory():
    states = MemoryEpisodeStates()
    for n in range(1000):
        with states.lock(f"nobody-{n}"):
            assert states.get(f"nobody-{n}") is None
    assert states._locks == {}


def test_ended_episodes_are_remembered_for_a_week_and_at_most_the_newest_n():
    """A late step names the episode as ended (400) long after the idle timeout; memory mode keeps a bounded number."""
    from loraloop.rollout.states import FINISHED_TTL_S, EpisodeState

    assert FINISHED_TTL_S >= 7 * 24 * 3600
    states = MemoryEpisodeStates(finished_kept=3)
    for n in range(5):
        states.put(EpisodeState(episode_id=f"e{n}", sample_id=n, task_id=f"t{n}", attempt=0, session={}))
        assert states.claim(f"e{n}") and not states.claim(f"e{n}")
    assert [states.finished(f"e{n}") for n in range(5)] == [False, False, True, True, True]
    expiring = MemoryEpisodeStates(finished_ttl_s=0.2)
    expiring.put(EpisodeState(episode_id="old", sample_id=0, task_id="t", attempt=0, session={}))
    expiring.claim("old")
    assert expiring.finished("old")
    time.sleep(0.25)
    assert not expiring.finished("old")
