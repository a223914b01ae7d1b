"""Helpers the test modules share: loopback ports, a shell task and its scripted play, a SmolLM2 LoRA.

Fixtures live in tests/conftest.py; these are plain functions a test calls with its own arguments."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from loraloop.envs.base import StepInfo

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "volumes" / "models" / "SmolLM2-135M-Instruct"
BASH = "Think: run.\nAct: bash\n```bash\n{}\n```"
LORALOOP = [sys.executable, "-m", "loraloop.cli"]
LS = "Think: look.\nAct: bash\n```bash\nls /root\n```"

# A valid REAL-format web task that tests vary field by field.
REAL_TASK = {
    "id": "shop-x",
    "goal": "Buy it.",
    "website": {"id": "shop", "url": "http://localhost:8090/shop"},
    "evals": [{"type": "jmespath", "query": 'differences.orders.added."0".total', "expected_value": 12.5}],
    "points": 1,
    "version": "t",
    "possible": True,
}


def step_info(fields: dict) -> StepInfo:
    """A step's typed info from a recorded one (tests/fixtures/web_pages keep Gymnasium's dict): the keys StepInfo
    names become its fields, any other its `details`; a recorded step with no turn or kind gets 1 and "recorded"."""
    named = {f.name for f in dataclasses.fields(StepInfo)} - {"details"}
    known = {k: v for k, v in fields.items() if k in named}
    return StepInfo(
        **{"turn": 1, "action_kind": "recorded", **known}, details={k: v for k, v in fields.items() if k not in named}
    )


def needs(service: str, problem: str, fix: str) -> None:
    """Fail the test (never skip) naming the service it needs, what is wrong and what to run."""
    import pytest

    pytest.fail(f"integration test needs {service}: {problem}; {fix}", pytrace=False)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, timeout: float = 60.0, alive: subprocess.Popen | None = None) -> None:
    """Return once something accepts connections on 127.0.0.1:`port`; TimeoutError after `timeout` s, and
    ChildProcessError as soon as `alive` (the process meant to listen) has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        if alive is not None and alive.poll() is not None:
            raise ChildProcessError(f"the process meant to listen on 127.0.0.1:{port} exited with {alive.returncode}")
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def run_cli(args, env=None, cwd=None, timeout=600) -> subprocess.CompletedProcess:
    """`loraloop ARGS` in a subprocess with `env` over this environment; its output captured as text."""
    return subprocess.run(
        LORALOOP + list(args),
        env={**os.environ, **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def simple_task(**extra):
    """A one-file counting task (answer 1) graded by the bundled integer-match check; `extra` overrides fields."""
    from loraloop.tasks.shell.format import parse_shell_task

    raw = {
        "description": "How many files in /root/d?",
        "create": {"init": "mkdir -p /root/d && touch /root/d/a"},
        "evaluation": {
            "check": [None, {"language": "python", "file": "check/integer-match.py"}],
            "example": {"code": "ls /root/d | wc -l"},
        },
        **extra,
    }
    return parse_shell_task(
        raw, file="t.json", number=0, index="t-00000", scripts_dir=ROOT / "configs" / "tasks" / "os" / "scripts"
    )


def play_both(tasks, settings, workers: int = 4) -> dict:
    """Every task played twice, its example and a wrong answer, `workers` episodes at a time (containers start
    and commands wait on Docker, so episodes overlap well even on 2 cores): {task index: (solved result, wrong
    result) or the exception one of them raised}. Tests parametrized by task assert on their own entry."""
    from concurrent.futures import ThreadPoolExecutor

    def both(task):
        try:
            return play(task, settings), play(task, settings, wrong=True)
        except Exception as exc:  # reported by that task's test
            return exc

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="play") as pool:
        return dict(zip([t.index for t in tasks], pool.map(both, tasks)))


def outcome_of(results: dict, task):
    """A task's (solved, wrong) results from `play_both`, raising what its episodes raised."""
    got = results[task.index]
    if isinstance(got, Exception):
        raise got
    return got


def play(task, settings, wrong=False):
    """Run the scripted teacher in a ShellEnv; with wrong=True answer something else (or finish without acting)."""
    from loraloop.envs.shell.env import ShellEnv
    from loraloop.envs.shell.teacher import ScriptedTeacher

    teacher = ScriptedTeacher(task)
    with ShellEnv(task, settings) as env:
        observation, _ = env.reset()
        if wrong:
            return env.step("Act: answer(definitely-wrong-42)" if task.uses_answer else "Act: finish")
        messages = [{"role": "user", "content": observation}]
        while True:
            result = env.step(teacher.act(messages).text)
            if result.done:
                return result
            messages.append({"role": "user", "content": result.observation})


def smollm_adapter(
    path: Path, random_b: bool, seed: int = 0, trainer_logprobs: bool = False, b_std: float = 0.05
) -> Path:
    """A real PEFT LoRA on SmolLM2: random B of standard deviation `b_std` (changes outputs) or PEFT's default zero B
    (changes nothing); with `trainer_logprobs`, saved as loraloop's trainers save one (its own logprobs on the
    verification prompts)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    peft = get_peft_model(
        model,
        LoraConfig(
            r=8,
            lora_alpha=16,
            target_modules=["q_proj", "v_proj"],
            init_lora_weights=not random_b,
            task_type="CAUSAL_LM",
        ),
    )
    if random_b:
        with torch.no_grad():
            for name, param in peft.named_parameters():
                if "lora_B" in name:
                    param.normal_(0, b_std)
    peft.save_pretrained(path)
    if trainer_logprobs:
        from transformers import AutoTokenizer

        from loraloop.train.verify_logprobs import save_trainer_logprobs

        save_trainer_logprobs(peft, AutoTokenizer.from_pretrained(MODEL), path, None)
    return path


def record_episode(store, task="t-00001", attempt=0, success=True):
    """Store a one-step episode (mode `mode`, run `run1`), checking that nothing shows before its end; its key."""
    from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
    from loraloop.store.trajectories import EpisodeRecorder

    rec = EpisodeRecorder(store, "mode", "run1", task, attempt)
    rec.add(EpisodeStart(task_id=task, seed=5, worker_temperature=0.7))
    rec.add(Step(step_idx=0, observation="o", raw_output="Act: finish"))
    assert not store.exists(rec.key)  # nothing visible before the episode ends
    rec.add(EpisodeEnd(success=success, total_steps=1))
    rec.flush()
    return rec.key


def store_episode(store, task, attempt, reward, steps, run="r"):
    """Store a teacher episode as export reads it: steps are (observation, reply, error) triples."""
    from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
    from loraloop.store.trajectories import EpisodeRecorder

    rec = EpisodeRecorder(store, "teacher", run, task, attempt)
    rec.add(
        EpisodeStart(
            task_id=task,
            mode="teacher",
            run_id=run,
            category="files",
            system_prompt="sys",
            examples=[],
            first_observation=f"Task: {task}",
        )
    )
    for i, (obs, out, err) in enumerate(steps):
        rec.add(Step(step_idx=i, observation=obs, raw_output=out, last_action_error=err, action_source="worker"))
    rec.add(
        EpisodeEnd(
            success=reward > 0, reward=reward, total_steps=len(steps), error_count=sum(bool(s[2]) for s in steps)
        )
    )
    rec.flush()


def image_tag(image: str) -> str | None:
    """The tag of an image reference, None when it has none (a registry's :port is no tag)."""
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def fuzz_api(
    app,
    examples: int,
    after=None,
    seeds: dict[str, list] | None = None,
    headers=None,
    allowed_5xx: tuple[str, ...] = (),
) -> dict[str, int]:
    """Schemathesis over an ASGI app's own OpenAPI schema: `examples` positive and as many negative cases per
    operation, plus the bodies `seeds` gives for a path; any 5xx fails, naming the call. `after(case, response)`
    runs on each answer; `headers(case)`, when given, the headers a call carries (a route's credentials); a 5xx whose
    text holds one of `allowed_5xx` (a dependency the test took down on purpose) passes. Returns the number of calls
    per status code."""
    from collections import Counter

    import schemathesis
    from hypothesis import HealthCheck, example, given, settings
    from hypothesis import strategies as st
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    codes = Counter()
    for operation in schema.get_all_operations():
        operation = operation.ok()

        @settings(max_examples=examples * 2, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(
            case=st.one_of(
                operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
            )
        )
        def check(case):
            response = case.call(headers=headers(case) if headers else None)
            codes[response.status_code] += 1
            assert response.status_code < 500 or any(text in response.text for text in allowed_5xx), (
                case.method,
                case.formatted_path,
                case.query,
                case.body,
                response.text[:300],
            )
            if after is not None:
                after(case, response)

        for body in (seeds or {}).get(operation.path, []):
            check = example(case=operation.Case(body=body))(check)
        check()
    return dict(codes)


def fuzz_stateful(
    app, links: dict[tuple[str, str], dict[str, dict]], steps: int, scenarios: int, prepare=None, after=None
) -> dict[str, int]:
    """Schemathesis's stateful run over an ASGI app's own schema, with OpenAPI `links` added to it: {(path, method of
    the source operation): {link name: link}} (an answer's field fed to the next call, e.g. a started episode's id
    to its step). `scenarios` sequences of at most `steps` calls each; any 5xx fails, naming the call.
    `prepare(case)` may change a case before it is sent (its credentials; a body field a scenario must get right to go
    on, such as the one sample a small registry has); `after(case, response)` runs on each answer. Returns the number
    of calls per operation and status, e.g. {"POST /api/episode/step 200": 12}."""
    import copy
    from collections import Counter

    import schemathesis
    from hypothesis import HealthCheck, settings

    raw = copy.deepcopy(app.openapi())
    for (path, method), named in links.items():
        answers = raw["paths"][path][method]["responses"]
        answers.setdefault("200", {"description": "OK"}).setdefault("links", {}).update(named)
    schema = schemathesis.openapi.from_dict(raw)
    schema.app, schema.location = app, "/openapi.json"
    codes = Counter()

    class Machine(schema.as_state_machine()):
        def before_call(self, case):
            if prepare is not None:
                prepare(case)

        def validate_response(self, response, case, **_kwargs):
            codes[f"{case.method} {case.path} {response.status_code}"] += 1
            assert response.status_code < 500, (case.method, case.formatted_path, case.body, response.text[:300])
            if after is not None:
                after(case, response)

    Machine.run(
        settings=settings(
            max_examples=scenarios,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            derandomize=True,  # the same scenarios on every run: a failure is reproducible, a pass is not luck
            suppress_health_check=list(HealthCheck),
        )
    )
    return dict(codes)


@contextmanager
def scripted_user(lines: list[str | dict], keys: list[str] | None = None):
    """A scripted tau2 user: an OpenAI-compatible server on loopback whose chat completions say `lines` in order (the
    last one again after that; a dict `{"name", "arguments"}` is a call on the user's tools); yields its base URL,
    and the requests it got. The user simulator reaches it through
    litellm as it would reach vLLM; only the words are fixed, so episodes on other domains are reproducible. `keys`,
    when given, collects the Authorization header of every request (to see which credentials reached it)."""
    import json

    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # /v1/models, for preflight
            self._send({"object": "list", "data": [{"id": "scripted-user", "object": "model"}]})

        def do_POST(self):
            if keys is not None:
                keys.append(self.headers.get("Authorization", ""))
            requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            line = lines[min(len(requests), len(lines)) - 1]
            message = {"role": "assistant", "content": line}
            if isinstance(line, dict):  # a call on the user's own tools (telecom's phone)
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call{len(requests)}",
                            "type": "function",
                            "function": {"name": line["name"], "arguments": json.dumps(line.get("arguments") or {})},
                        }
                    ],
                }
            self._send(
                {
                    "id": f"u{len(requests)}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "scripted-user",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls" if isinstance(line, dict) else "stop",
                            "message": message,
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )

        def _send(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", requests
    finally:
        server.shutdown()
        server.server_close()


class FaultProxy:
    """A fault injector in front of a real vLLM: the next `fail` chat completions get HTTP 500, and each one
    waits `delay_s` before it is forwarded; everything else is passed through as it is."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removesuffix("/v1")
        self.fail, self.delay_s, self.failed = 0, 0.0, 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def do_GET(self):
                self.forward(None)

            def do_POST(self):
                self.forward(self.rfile.read(int(self.headers.get("Content-Length", 0))))

            def forward(self, body):
                if self.path.endswith("/chat/completions"):
                    with proxy.lock:
                        fail = proxy.fail > 0
                        proxy.fail -= int(fail)
                        proxy.failed += int(fail)
                    if fail:
                        return self.reply(500, b'{"error": {"message": "injected fault"}}')
                    time.sleep(proxy.delay_s)
                answer = httpx.request(
                    self.command,
                    proxy.upstream + self.path,
                    content=body,
                    timeout=120,
                    headers={"Content-Type": "application/json"},
                )
                self.reply(answer.status_code, answer.content)

            def reply(self, code, content):
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
