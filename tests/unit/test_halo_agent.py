"""The HALO orchestrator's decision order over a real EpisodeSession and file store.

The environment, the worker and the manager here are minimal in-test objects: a text shell that answers a few
commands, and policies replaying fixed replies, so each rule is checked on known steps. The Verified Action
Cache and the macros are in-test objects with agents/vac.py's and agents/macros.py's interfaces (the modules
themselves have their own tests); the integration test runs the real ones on real servers.
"""

from types import SimpleNamespace

from loraloop.agents.halo import HaloAgent, Tuning
from loraloop.agents.manager import Manager
from loraloop.agents.policy import OpenAIPolicy, Reply
from loraloop.envs.base import ResetInfo, StepInfo, StepResult
from loraloop.envs.shell.protocol import parse_action
from loraloop.kinds.registry import env_kind
from loraloop.rollout.session import EpisodeSession
from loraloop.store import open_store
from loraloop.store.records import NO_HALO, Provenance
from tests.helpers import BASH

ANSWER = "Think: done.\nAct: answer(3)"
SHELL = env_kind("shell")
TASK = SimpleNamespace(index="t1", env="shell", split="test", category="c", description="count")


def halo(step):
    """The step's HALO part, empty where it has none."""
    return step.halo or NO_HALO


class TextShell:
    """A shell env in miniature: `outputs` maps a command to (output, exit code); anything else exits 127."""

    instructions, examples, prompt_style, stop = "Solve it.", [], "chat", None

    def __init__(self, outputs=None, max_rounds=8):
        self.outputs, self.max_rounds, self.turn = outputs or {"ls": ("a b c", 0)}, max_rounds, 0

    def reset(self, *, seed=None, options=None):
        return "Task: count", ResetInfo(expected="3")

    def step(self, action):
        self.turn += 1
        parsed = parse_action(action)
        info = StepInfo(self.turn, parsed.kind)
        if parsed.kind == "answer":
            right = parsed.content == "3"
            return StepResult(None, float(right), True, False, info.end("completed", right, parsed.content))
        if parsed.kind == "invalid":
            observation, info.error = "bad format", parsed.error
        else:
            output, info.exit_code = self.outputs.get(parsed.content, ("command not found", 127))
            observation = f"The output of the OS:\n\n{output}"
        cut = self.turn >= self.max_rounds
        return StepResult(observation, 0.0, False, cut, info.end("round_limit", False) if cut else info)

    def close(self):
        pass


class Replies:
    """A policy replaying fixed replies in order (the last one again when they run out)."""

    def __init__(self, *texts, source="worker"):
        self.texts, self.source, self.asked = list(texts), source, []

    def act(self, messages):
        self.asked.append(messages)
        text = self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]
        return Reply(text, self.source, f"{self.source}-model", 2.0, completion_tokens=3)


def play(tmp_path, agent, env=None, run="r", max_steps=8):
    env = env or TextShell(max_rounds=max_steps)
    session = EpisodeSession(
        open_store(f"file://{tmp_path}"),
        env,
        TASK,
        mode="m",
        run_id=run,
        attempt=0,
        provenance=Provenance(max_steps=max_steps),
    )
    session.start()
    while not session.done:
        agent.step(session)
    session.finish()
    return session, [r for r in session.recorder.records if r.type == "step"], session.recorder.records[-1]


def manager_of(*texts):
    return Manager(Replies(*texts, source="manager"), "manager-model", "http://m/v1")


def test_warm_start_then_the_worker(tmp_path):
    agent = HaloAgent(
        Replies(ANSWER),
        SHELL,
        "t1",
        manager=manager_of("Reason: look first\n" + BASH.format("ls")),
        tuning=Tuning(warm_start_steps=1),
    )
    session, steps, end = play(tmp_path, agent)
    assert [s.action_source for s in steps] == ["manager", "worker"] and session.outcome.success
    assert (halo(steps[0]).manager_called, halo(steps[0]).gate, halo(steps[0]).manager_reason) == (
        True,
        "warm_start",
        "look first",
    )
    assert steps[0].model == "manager-model" and steps[0].prompt_token_ids is None  # no worker tokens on it
    assert not halo(steps[1]).manager_called and halo(steps[1]).gate is None and end.manager_calls == 1
    assert [s.progress_score for s in steps] == [None, None] and end.max_progress_score is None  # no facet


def test_a_repeated_error_gets_recovery_then_the_manager(tmp_path):
    worker = Replies("no action", "still none", ANSWER)
    agent = HaloAgent(
        worker,
        SHELL,
        "t1",
        manager=manager_of("Reason: answer now\n" + ANSWER),
        tuning=Tuning(warm_start_steps=0, use_recovery=True),
    )
    _, steps, end = play(tmp_path, agent)
    assert [s.action_source for s in steps] == ["worker", "worker", "recovery", "manager"]
    assert halo(steps[2]).recovery == "repeated_error" and "cd ~ && echo" in steps[2].raw_output
    assert steps[2].action == "bash" and "last error: no " in steps[2].raw_output  # the quoted `Act:` defused
    assert (halo(steps[3]).gate, halo(steps[3]).manager_reason) == ("repeated_error", "answer now")
    assert (end.recoveries, end.manager_calls, end.success) == (1, 1, True)


def test_without_recovery_the_manager_takes_the_repeated_error(tmp_path):
    agent = HaloAgent(
        Replies("no action", "none", ANSWER),
        SHELL,
        "t1",
        manager=manager_of(ANSWER),
        tuning=Tuning(warm_start_steps=0),
    )
    _, steps, end = play(tmp_path, agent)
    assert [(s.action_source, halo(s).gate) for s in steps] == [
        ("worker", None),
        ("worker", None),
        ("manager", "repeated_error"),
    ]
    assert end.recoveries == 0 and end.manager_calls == 1


def test_a_manager_reply_without_an_action_leaves_the_step_to_the_worker(tmp_path):
    agent = HaloAgent(
        Replies(ANSWER),
        SHELL,
        "t1",
        manager=manager_of("Reason: the agent knows\nGood luck."),
        tuning=Tuning(warm_start_steps=1),
    )
    _, steps, end = play(tmp_path, agent)
    assert [(s.action_source, halo(s).gate, halo(s).manager_called, halo(s).manager_reason) for s in steps] == [
        ("worker", "warm_start", True, "the agent knows")
    ]
    assert steps[0].model == "worker-model" and end.manager_calls == 1


def test_a_destructive_command_goes_to_the_manager(tmp_path):
    manager = manager_of("Reason: never delete\n" + ANSWER)
    agent = HaloAgent(
        Replies(BASH.format("rm -rf /root")), SHELL, "t1", manager=manager, tuning=Tuning(warm_start_steps=0)
    )
    _, steps, _ = play(tmp_path, agent)
    assert [(s.action_source, halo(s).gate, halo(s).manager_reason) for s in steps] == [
        ("manager", "high_stakes", "never delete")
    ]
    assert "rm -rf /root" in manager.policy.asked[0][-1]["content"]  # it saw the proposal


def test_a_manager_that_does_not_answer_leaves_the_worker_alone(tmp_path):
    url = "http://127.0.0.1:9/v1"  # a real refused connection
    manager = Manager(OpenAIPolicy(model="m", base_url=url, retries=0, timeout=5), "m", url)
    agent = HaloAgent(
        Replies("no action", "none", ANSWER), SHELL, "t1", manager=manager, tuning=Tuning(warm_start_steps=1)
    )
    session, steps, end = play(tmp_path, agent)
    assert [s.action_source for s in steps] == ["worker"] * 3 and session.outcome.success
    assert (
        halo(steps[0]).manager_called
        and halo(steps[0]).gate == "warm_start"
        and "unreachable" in halo(steps[0]).manager_error
    )
    assert not halo(steps[1]).manager_called and halo(steps[1]).manager_error is None
    # the next gate is recorded with the outage; the dead manager is not called again
    assert (halo(steps[2]).gate, halo(steps[2]).manager_called) == ("repeated_error", False) and halo(
        steps[2]
    ).manager_error
    assert end.manager_calls == 1


class Twice:
    """An in-test macro with agents/macros.py's interface: `twice(command=...)` runs a command two times."""

    def __init__(self, call, command):
        self.name, self.call, self.left = "twice", call, [command, command]

    def next_action(self, observation):
        if "command not found" in observation:
            raise MacroError("twice: the last step failed: command not found")
        return BASH.format(self.left.pop()) if self.left else None


class MacroError(Exception):
    pass


def parse_macro(text, kind):
    if "twice(" not in text:
        return None
    call = text[text.index("twice(") :].strip()
    if "command=" not in call:
        raise MacroError("twice: missing argument 'command'")
    return Twice(call, call.split("'")[1])


MACROS = SimpleNamespace(parse_macro=parse_macro, MacroError=MacroError)


def test_macros_expand_into_recorded_steps_and_a_bad_call_is_an_error_observation(tmp_path):
    env = TextShell()
    agent = HaloAgent(Replies("Act: twice()", "Act: twice(command='ls')", ANSWER), SHELL, "t1", macros=MACROS)
    session, steps, end = play(tmp_path, agent, env)
    assert [s.action_source for s in steps] == ["worker", "macro", "macro", "worker"] and session.outcome.success
    assert steps[0].last_action_error == "twice: missing argument 'command'" and steps[0].action == "invalid"
    assert steps[0].next_observation.startswith("Your last reply could not be taken: twice: missing argument")
    assert [halo(s).macro for s in steps[1:3]] == ["twice(command='ls')"] * 2 and halo(steps[3]).macro is None
    assert steps[1].raw_output == BASH.format("ls") and env.turn == 3  # the bad call never reached the env
    assert end.error_count == 1


def test_a_macro_that_cannot_go_on_is_an_error_observation_and_the_worker_goes_on(tmp_path):
    agent = HaloAgent(Replies("Act: twice(command='nope')", ANSWER), SHELL, "t1", macros=MACROS)
    session, steps, _ = play(tmp_path, agent)
    assert [(s.action_source, halo(s).macro is not None) for s in steps] == [
        ("macro", True),
        ("macro", True),
        ("worker", False),
    ]
    assert steps[1].last_action_error == "twice: the last step failed: command not found" and session.outcome.success


def test_replies_that_never_reach_the_env_still_end_at_max_steps(tmp_path):
    agent = HaloAgent(Replies("Act: twice()"), SHELL, "t1", macros=MACROS)
    session, steps, _ = play(tmp_path, agent, max_steps=2)
    assert len(steps) == 2 and steps[-1].truncated and session.outcome.status == "round_limit"


class Cache:
    """An in-test cache with agents/vac.py's ActionCache interface and rules (hit, miss, repeat; evicted at the
    2nd failure), recording what it was told."""

    def __init__(self):
        self.entries, self.told = {}, []

    def lookup(self, key, *, kind, observation, recent_actions):
        if key not in self.entries:
            return SimpleNamespace(action=None, event="miss")
        if recent_actions and recent_actions[-1] == self.entries[key][0]:
            return SimpleNamespace(action=None, event="repeat")
        return SimpleNamespace(action=self.entries[key][0], event="hit")

    def verified(self, key, action):
        self.told.append(("verified", key, action))
        self.entries.setdefault(key, (action, 0))

    def failed(self, key, action):
        self.told.append(("failed", key, action))
        action, failures = self.entries[key]
        self.entries[key] = (action, failures + 1)
        if failures + 1 >= 2:
            del self.entries[key]


VAC = SimpleNamespace(
    state_key=lambda kind, task_id, observation: f"{kind.name}:{task_id}:{observation}",
    action_worked=lambda kind, info, before, after: (
        not info.error and (info.success if after is None else info.exit_code == 0)
    ),
)


def test_the_cache_is_asked_before_the_worker_and_learns_from_every_step(tmp_path):
    cache = Cache()
    ls = BASH.format("ls")
    agent = HaloAgent(Replies(ls, ANSWER), SHELL, "t1", cache=cache, vac=VAC)
    _, steps, end = play(tmp_path, agent, run="first")
    assert [(s.action_source, halo(s).cache_event) for s in steps] == [("worker", "miss"), ("worker", "miss")]
    assert cache.entries["shell:t1:Task: count"] == (ls, 0) and (end.cache_hits, end.cache_misses) == (0, 2)
    worker = Replies(ANSWER)
    _, steps, end = play(tmp_path, HaloAgent(worker, SHELL, "t1", cache=cache, vac=VAC), run="second")
    assert [(s.action_source, halo(s).cache_hit, halo(s).cache_event) for s in steps] == [
        ("cache", True, "hit"),
        ("cache", True, "hit"),
    ]
    assert steps[0].raw_output == ls and not worker.asked and (end.cache_hits, end.cache_misses) == (2, 0)
    # the cached command now fails (exit 1): counted as a failure each time, evicted at the second
    broken = TextShell({"ls": ("ls: cannot open", 1)}, max_rounds=2)
    for run in ("third", "fourth"):
        play(
            tmp_path,
            HaloAgent(Replies(ANSWER), SHELL, "t1", cache=cache, vac=VAC),
            broken if run == "third" else TextShell({"ls": ("ls: cannot open", 1)}, max_rounds=2),
            run=run,
        )
    assert [t[0] for t in cache.told].count("failed") == 2 and "shell:t1:Task: count" not in cache.entries
