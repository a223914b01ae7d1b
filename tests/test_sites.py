"""The offline task websites on a real server: REAL's protocol over HTTP, and every bundled web task's
solution and wrong path driven through real Chromium by ARIA role and accessible name."""
from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import jmespath
import pytest
import uvicorn

from loraloop.envs.web.sites import create_app
from loraloop.envs.web.sites.state import collection_diff, initial_final_diff

from tests.conftest import free_port

TASKS = Path(__file__).resolve().parents[1] / "configs" / "tasks" / "web"
SCRIPTS = TASKS / "eval_scripts"
TASK_FILES = sorted(TASKS.glob("*/*.json"))
REPORT_KEYS = {"initialstate", "finalstate", "differences", "initialfinaldiff", "actionhistory"}
FINAL = ("send_msg_to_user", "report_infeasible")


@pytest.fixture(scope="module")
def origin():
    """The sites served by uvicorn in a background thread on a free loopback port."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the sites did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def report(page: str) -> dict:
    """The JSON document in a /finish page's <pre>."""
    match = re.search(r"<pre>(.*?)</pre>", page, re.S)
    assert match, "no <pre> on the finish page"
    return json.loads(html.unescape(match.group(1)))


@contextmanager
def configured(origin: str, site: str, run_id: str) -> Iterator[httpx.Client]:
    """A client whose cookie binds it to a freshly reset run of `site`."""
    with httpx.Client(base_url=origin, follow_redirects=True, timeout=10) as client:
        response = client.get(f"/{site}/config", params={"run_id": run_id, "task_id": "t", "latency": 0})
        assert response.status_code == 200 and client.cookies.get("loraloop_run") == run_id
        yield client


def test_health_and_index(origin):
    assert httpx.get(f"{origin}/healthz").json() == {"ok": True}
    index = httpx.get(f"{origin}/").text
    assert 'href="/shop"' in index and 'href="/mail"' in index


def test_config_resets_the_run(origin):
    with configured(origin, "shop", "reset-run") as client:
        client.post("/shop/cart/add", data={"product_id": "p10", "quantity": "2"})
        changed = report(client.get("/shop/finish").text)
        assert changed["differences"]["cart"]["added"]["0"] == {
            "id": "p10", "name": "Wireless Mouse", "price": 24.99, "quantity": 2}
        client.get("/shop/config", params={"run_id": "reset-run"})
        fresh = report(client.get("/shop/finish").text)
        assert fresh["finalstate"] == fresh["initialstate"] and fresh["finalstate"]["cart"]["items"] == []
        assert fresh["actionhistory"] == []


def test_finish_reports_both_diffs_after_a_post(origin):
    with configured(origin, "mail", "diff-run") as client:
        assert client.post("/mail/email/e7/star").status_code == 200
        client.post("/mail/send", data={"to": "tom.becker@example.com", "subject": "Hi", "body": "Hello"})
        document = report(client.get("/mail/finish").text)
    assert set(document) == REPORT_KEYS
    assert document["differences"]["emails"]["updated"]["e7"] == {"isStarred": True, "isRead": True}
    assert document["differences"]["emails"]["added"]["0"]["to"] == ["tom.becker@example.com"]
    assert document["initialfinaldiff"]["updated"]["email"]["emails"]["e7"]["isStarred"] is True
    assert document["initialfinaldiff"]["added"]["email"]["emails"]["e23"]["subject"] == "Hi"
    assert ["star", "open_email", "send_email"] == [a["type"] for a in document["actionhistory"]
                                                    if a["type"] in ("open_email", "star", "send_email")]


def test_runs_are_isolated(origin):
    with configured(origin, "shop", "run-a") as a, configured(origin, "shop", "run-b") as b:
        a.post("/shop/cart/add", data={"product_id": "p1", "quantity": "1"})
        assert "Cart (1)" in a.get("/shop").text and "Cart (0)" in b.get("/shop").text
        assert report(b.get("/shop/finish").text)["differences"]["cart"]["added"] == {}
        by_param = report(b.get("/shop/finish", params={"run_id": "run-a"}).text)
        assert by_param["differences"]["cart"]["added"]["0"]["id"] == "p1"


def test_unknown_run_is_a_clear_404(origin):
    response = httpx.get(f"{origin}/shop/finish", params={"run_id": "never-configured"})
    assert response.status_code == 404 and "never-configured" in response.text and "/config" in response.text


@pytest.mark.parametrize("site, path, data, field", [
    ("shop", "/shop/cart/add", {"product_id": "p1", "quantity": "abc"}, "Quantity"),
    ("shop", "/shop/cart/add", {"product_id": "p1", "quantity": "11"}, "Quantity"),
    ("mail", "/mail/send", {"to": "", "subject": "x", "body": "y"}, "To"),
    ("mail", "/mail/send", {"to": "not-an-address", "subject": "x", "body": "y"}, "To"),
])
def test_bad_input_is_a_4xx_page_naming_the_field(origin, site, path, data, field):
    with configured(origin, site, f"bad-{uuid.uuid4()}") as client:
        response = client.post(path, data=data)
    assert response.status_code == 400 and 'role="alert"' in response.text
    assert re.search(rf'role="alert"[^>]*>{field}\b', response.text)


def test_checkout_names_the_missing_field(origin):
    with configured(origin, "shop", "checkout-run") as client:
        client.post("/shop/cart/add", data={"product_id": "p1", "quantity": "1"})
        response = client.post("/shop/checkout", data={"fullName": "A", "street": "B", "city": "", "zip": "1",
                                                       "country": "US", "speed": "express"})
    assert response.status_code == 400 and "City: this field is required" in response.text


def test_diffs_of_plain_values_and_collections():
    before = {"a": [{"id": "x", "n": 1}, {"id": "y", "n": 2}], "tags": []}
    after = {"a": [{"id": "x", "n": 5}, {"id": "z", "n": 3}], "tags": ["t"]}
    assert collection_diff(before["a"], after["a"]) == {
        "added": {"0": {"id": "z", "n": 3}}, "updated": {"x": {"n": 5}}, "deleted": {"y": {"id": "y", "n": 2}}}
    assert initial_final_diff(before, after) == {
        "added": {"a": {"z": {"id": "z", "n": 3}}}, "updated": {"a": {"x": {"n": 5}}, "tags": ["t"]},
        "deleted": {"a": {"y": {"id": "y", "n": 2}}}}


def test_task_set_is_complete():
    tasks = [json.loads(path.read_text()) for path in TASK_FILES]
    assert len({task["id"] for task in tasks}) == len(tasks)
    assert sum(task["id"].startswith("shop-") for task in tasks) >= 22
    assert sum(task["id"].startswith("mail-") for task in tasks) >= 22
    assert sum(not task["possible"] for task in tasks) >= 2
    scripts = [e["script"] for task in tasks for e in task["evals"] if "script" in e]
    assert len(scripts) >= 6 and all((SCRIPTS / name).is_file() for name in scripts)
    for path, task in zip(TASK_FILES, tasks):
        assert path.stem == task["id"] and task["version"] == "loraloop" and task["points"] == 1
        assert task["solution"][-1]["do"] in FINAL and task["wrong_path"][-1]["do"] in FINAL


def grade(task: dict, state: dict, scripts_dir: Path) -> list[bool]:
    """One verdict per eval, as REAL's evaluator gives them (jmespath equality, or a script's SUCCESS)."""
    verdicts = []
    for check in task["evals"]:
        if "script" in check:
            with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
                json.dump(state, handle)
                handle.flush()
                proc = subprocess.run([sys.executable, str(scripts_dir / check["script"]), handle.name],
                                      capture_output=True, text=True, timeout=30)
            verdicts.append("SUCCESS" in proc.stdout.upper())
        else:
            verdicts.append(jmespath.search(check["query"], state) == check["expected_value"])
    return verdicts


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module; each task gets a fresh context."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield chromium
        chromium.close()


def perform(page, origin: str, step: dict) -> None:
    """One solution step, located like Playwright's get_by_role(role, name=name, exact=True).nth(nth)."""
    action = step["do"]
    if action == "goto":
        page.goto(origin + step["value"])
    elif action == "go_back":
        page.go_back()
    else:
        target = page.get_by_role(step["role"], name=step["name"], exact=True).nth(step.get("nth", 0))
        if action == "fill":
            target.fill(step["value"])
        elif action == "select_option":
            target.select_option(label=step["value"])
        elif action == "press":
            target.press(step["value"])
        else:
            getattr(target, action)()
    page.wait_for_load_state()


def play(browser, origin: str, task: dict, steps: list[dict]) -> dict:
    """Reset a fresh run, open the task's site, perform the steps and return the /finish document."""
    site_url = re.sub(r"^https?://[^/]+", origin, task["website"]["url"])
    context = browser.new_context()
    context.set_default_timeout(5000)
    try:
        page = context.new_page()
        page.goto(f"{site_url}/config?run_id={uuid.uuid4()}&task_id={task['id']}&latency=0")
        page.goto(site_url)
        for step in steps:
            if step["do"] in FINAL:
                break
            perform(page, origin, step)
        page.goto(f"{site_url}/finish")
        return json.loads(page.inner_text("pre"))
    finally:
        context.close()


@pytest.mark.parametrize("path", TASK_FILES, ids=[path.stem for path in TASK_FILES])
def test_task_solution_passes_and_wrong_path_fails(origin, browser, path):
    task = json.loads(path.read_text())
    solved = grade(task, play(browser, origin, task, task["solution"]), SCRIPTS)
    assert all(solved), f"solution fails evals {[e for e, ok in zip(task['evals'], solved) if not ok]}"
    wrong = grade(task, play(browser, origin, task, task["wrong_path"]), SCRIPTS)
    assert not all(wrong), "the wrong path passes every eval"
