"""The web environment on real Chromium against a real HTTP site: actions, observations, robustness."""

from __future__ import annotations

import asyncio
import html
import json
import os
import signal
import socket
import threading
import time

import pytest
import uvicorn
from fastapi import FastAPI, Form
from fastapi.responses import HTMLResponse, RedirectResponse

from loraloop.envs.web.browser import BrowserHost, close_browsers
from loraloop.envs.web.env import WebEnv
from loraloop.errors import EnvironmentFailure
from loraloop.settings import Settings
from loraloop.tasks.web.format import parse_web_task
from tests.helpers import free_port, wait_port

pytestmark = pytest.mark.usefixtures("chromium")

PAGE = """<html><head><title>Fixture</title></head><body><h1>Fixture site</h1>
<form method="post" action="/s/save"><label for="n">Your name</label><input id="n" name="name">
<button>Save</button></form><p>Saved: {name}</p>
<a href="http://127.0.0.1:{away}/">Elsewhere</a> <a href="/s/hang">Hanging page</a>
<button onclick="alert('hello there')">Alert me</button> <a href="/s" target="_blank">Open in new tab</a>
</body></html>"""


SLOW_S = 3.0  # how long /s/save_slowly takes to answer


def fixture_app(away_port: int) -> FastAPI:
    """A tiny site speaking REAL's /config and /finish, with pages that misbehave on purpose."""
    app = FastAPI()
    state = {"name": ""}

    @app.get("/s/config")
    def config(run_id: str, task_id: str):
        state["name"] = ""
        return HTMLResponse("<p>ready</p>")

    @app.get("/s/finish")
    def finish():
        doc = {"initialstate": {"name": ""}, "finalstate": dict(state), "differences": {"name": state["name"]}}
        return HTMLResponse(f"<pre>{html.escape(json.dumps(doc))}</pre>")

    @app.get("/s")
    def home():
        return HTMLResponse(PAGE.format(name=html.escape(state["name"]), away=away_port))

    @app.post("/s/save")
    def save(name: str = Form("")):
        state["name"] = name
        return RedirectResponse("/s", status_code=303)

    @app.get("/s/guarded")
    def guarded():  # asks before it is left, once touched (Chromium wants a user gesture for that)
        return HTMLResponse(
            "<html><body><script>addEventListener('beforeunload', e => { e.preventDefault(); e.returnValue = ''; });"
            "</script><button>Touch</button></body></html>"
        )

    @app.get("/s/slow")
    def slow_form():
        return HTMLResponse(
            '<html><body><form method="post" action="/s/save_slowly"><label for="m">Slow name</label>'
            '<input id="m" name="name"><button>Save slowly</button></form></body></html>'
        )

    @app.post("/s/save_slowly")
    async def save_slowly(name: str = Form("")):  # answers after the action timeout, within the load timeout
        await asyncio.sleep(SLOW_S)
        state["name"] = name
        return RedirectResponse("/s", status_code=303)

    @app.get("/s/hang")
    async def hang():
        await asyncio.sleep(3600)

    return app


@pytest.fixture(scope="module")
def site():
    """The fixture site on a free loopback port, and a port where another server answers (off-site)."""
    away = free_port()
    port = free_port()
    servers = [
        uvicorn.Server(uvicorn.Config(fixture_app(away), port=port, log_level="warning")),
        uvicorn.Server(uvicorn.Config(FastAPI(), port=away, log_level="warning")),
    ]
    threads = [threading.Thread(target=s.run, daemon=True) for s in servers]
    for t in threads:
        t.start()
    wait_port(port)
    wait_port(away)
    yield f"http://127.0.0.1:{port}/s"
    for s in servers:
        s.should_exit = True


def make_task(url: str, expected: str = "Ann"):
    return parse_web_task(
        {
            "id": "fixture-1",
            "goal": f"Save the name {expected}.",
            "website": {"id": "fixture", "url": url},
            "version": "test",
            "evals": [{"type": "jmespath", "query": "finalstate.name", "expected_value": expected}],
        },
        file="test",
    )


def bid(observation: str, role: str, name: str) -> str:
    from loraloop.envs.web.teacher import find_bid

    found = find_bid(observation, role, name)
    assert found is not None, f"no {role} {name!r} in:\n{observation}"
    return found


@pytest.fixture
def env(site, settings_for):
    env = WebEnv(make_task(site), settings_for(web_load_timeout_ms=2500, web_action_timeout_ms=1500), max_rounds=20)
    yield env
    env.close()


def test_observation_has_bids_tree_url_and_goal(env, site):
    obs, _ = env.reset()
    assert obs.startswith("# Goal\nSave the name Ann.")
    assert f"URL: {site}" in obs and "Tab 0 (active)" in obs
    assert "\t[" in obs and "textbox 'Your name'" in obs and "heading 'Fixture site', level=1" in obs
    step = env.step(f"Think: type.\nAction: fill('{bid(obs, 'textbox', 'Your name')}', 'Ann')")
    assert not step.done and step.info.error is None and "value='Ann'" in step.observation
    step = env.step(f"click('{bid(step.observation, 'button', 'Save')}')")
    assert "StaticText 'Saved: Ann'" in step.observation
    assert step.info.url.startswith(site)
    done = env.step("send_msg_to_user('saved')")
    assert done.done and done.reward == 1.0 and done.info.success is True
    assert done.info.details["evals"][0]["actual_value"] == "Ann"


def test_wrong_final_state_fails_the_eval(env):
    env.reset()
    done = env.step("send_msg_to_user('nothing done')")
    assert done.done and done.reward == 0.0 and done.info.success is False


def test_the_final_state_is_read_on_the_episodes_page_even_one_that_asks_before_it_is_left(env, site):
    """/finish is read on the episode's own page (one renderer an episode): a page that asks before it is
    left (beforeunload) is let go then, not kept as during the episode."""
    env.reset()
    obs = env.step(f"goto('{site}/guarded')").observation
    step = env.step(f"click('{bid(obs, 'button', 'Touch')}')")
    assert step.info.error is None, step.info
    step = env.step(f"goto('{site}')")  # during the episode the page asks, and stays
    assert "beforeunload" in step.observation and "/guarded" in (step.info.url or "") + step.observation
    done = env.step("send_msg_to_user('nothing done')")
    assert done.done and done.info.status == "completed" and done.info.success is False
    assert done.info.details["final_state_differences"] == {"name": ""}


def test_bad_actions_give_error_observations(env):
    obs, _ = env.reset()
    for action, message in [
        ("click('999')", "no element with bid '999'"),
        ("click('1\"] , x')", "is not a bid"),
        ("Action: frobnicate()", "unknown action 'frobnicate'"),
        ("tab_focus(5)", "no tab 5"),
        ("tab_close()", "last tab cannot be closed"),
    ]:
        step = env.step(action)
        assert not step.done and message in step.info.error, (action, step.info)
        assert "# Error from the last action" in step.observation and message in step.observation
    assert "Fixture site" in step.observation  # the page is still there
    del obs


def test_step_limit_ends_the_episode(site, settings_for):
    env = WebEnv(make_task(site), settings_for(), max_rounds=2)
    try:
        env.reset()
        assert not env.step("noop(10)").done
        last = env.step("noop(10)")
        assert last.done and last.info.status == "round_limit" and last.info.success is False
    finally:
        env.close()


def test_dialog_popup_and_leaving_the_site(env, site):
    obs, _ = env.reset()
    step = env.step(f"click('{bid(obs, 'button', 'Alert me')}')")
    assert "alert 'hello there' dialog appeared and was dismissed" in step.observation
    step = env.step(f"click('{bid(step.observation, 'link', 'Open in new tab')}')")
    if "Tab 1" not in step.observation:  # under load the popup may attach after the click returned:
        step = env.step("noop(200)")  # it is then reported with the next observation
    assert "Tab 1 (active)" in step.observation and "new tab(s) opened" in step.observation
    step = env.step("tab_close()")
    assert "Tab 1" not in step.observation
    step = env.step(f"click('{bid(step.observation, 'link', 'Elsewhere')}')")
    assert "outside the task's site" in step.info.error and f"URL: {site}" in step.observation


def test_host_files_and_browser_pages_stay_out_of_reach(env, site):
    env.reset()
    for url in ("file:///etc/passwd", "chrome://version", "view-source:file:///etc/passwd"):
        step = env.step(f"goto('{url}')")
        assert "outside the task's site" in (step.info.error or "") or "failed" in (step.info.error or ""), url
        assert "root:x:0" not in step.observation and f"URL: {site}" in step.observation
    step = env.step("new_tab()")
    step = env.step("goto('file:///etc/passwd')")
    assert "root:x:0" not in step.observation and "outside the task's site" in step.info.error


def test_a_navigation_that_fails_takes_the_agent_back_to_the_page_it_was_on(env, site):
    """A goto to a loopback port nothing listens on fails (ERR_CONNECTION_REFUSED) and Chromium then shows its error
    page (chrome-error://); the agent is told and is back on the site's page, not left on the error page."""
    env.reset()
    step = env.step(f"goto('{site}/slow')")
    assert f"URL: {site}/slow" in step.observation
    step = env.step(f"goto('http://127.0.0.1:{free_port()}/')")
    assert "ERR_CONNECTION_REFUSED" in step.info.error and f"went back to {site}/slow" in step.info.error, step.info
    assert f"URL: {site}/slow" in step.observation and "chrome-error" not in step.observation


def test_a_form_whose_server_answers_after_the_action_timeout_still_submits(site, settings_for):
    """The action timeout bounds the wait for an element; the navigation a click starts has the load timeout to
    commit (a slow server under load failed CI's web teacher as 'Timeout 5000ms exceeded' and lost the submit)."""
    env = WebEnv(make_task(site), settings_for(web_load_timeout_ms=6000, web_action_timeout_ms=1500), max_rounds=20)
    try:
        env.reset()
        obs = env.step(f"goto('{site}/slow')").observation
        obs = env.step(f"fill('{bid(obs, 'textbox', 'Slow name')}', 'Ann')").observation
        started = time.monotonic()
        step = env.step(f"click('{bid(obs, 'button', 'Save slowly')}')")
        assert step.info.error is None, step.info
        assert time.monotonic() - started >= SLOW_S and "StaticText 'Saved: Ann'" in step.observation
        done = env.step("send_msg_to_user('saved')")
        assert done.info.success is True, done.info
    finally:
        env.close()


def test_page_that_never_loads(env, site):
    obs, _ = env.reset()
    started = time.monotonic()
    step = env.step(f"click('{bid(obs, 'link', 'Hanging page')}')")
    assert time.monotonic() - started < 15
    assert "did not load" in step.info.error, step.info
    step = env.step(f"goto('{site}')")
    assert step.info.error is None and "Fixture site" in step.observation


def test_site_that_never_answers_fails_reset_cleanly(settings_for):
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/s"
        env = WebEnv(make_task(url), settings_for(web_load_timeout_ms=1500))
        started = time.monotonic()
        with pytest.raises(EnvironmentFailure, match="did not load"):
            env.reset()
        assert time.monotonic() - started < 10
        env.close()


def test_crashed_renderer_fails_the_episode_then_next_episode_works(env, site, settings_for):
    env.reset()
    env.host.run(_crash(env), timeout=10)
    with pytest.raises(EnvironmentFailure, match="crash"):
        env.step("noop(10)")
    env.close()
    again = WebEnv(make_task(site), settings_for())
    try:
        assert "Fixture site" in again.reset()[0]
    finally:
        again.close()


async def _crash(env):
    """Crash the page's renderer and return once Playwright has reported the crash to the env."""
    cdp = await env.context.new_cdp_session(env.page)
    crashed = asyncio.ensure_future(env.page.wait_for_event("crash", timeout=5000))
    call = asyncio.ensure_future(cdp.send("Page.crash"))  # never answers: its renderer is gone
    await crashed
    call.cancel()
    await asyncio.gather(call, return_exceptions=True)
    assert env.events.crashed


def _parent(pid: int) -> int:
    """The parent of `pid` (0 once it is gone): the field after the command's closing parenthesis."""
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _ours(pid: int) -> bool:
    """True when this process is among `pid`'s ancestors (its Playwright driver started it)."""
    while pid > 1:
        pid = _parent(pid)
        if pid == os.getpid():
            return True
    return False


def _browser_pids() -> list[int]:
    """Chromium main processes started by this test process's Playwright (not renderers, and not another
    process's browsers: tests of another checkout may run beside these)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if (
            cmd
            and os.path.basename(cmd[0]) in (b"chromium", b"chromium-headless-shell")
            and not any(a.startswith(b"--type=") for a in cmd)
            and any(b"playwright" in a for a in cmd)
            and _ours(int(pid))
        ):
            pids.append(int(pid))
    return pids


def test_killed_browser_is_restarted(site, settings_for):
    env = WebEnv(make_task(site), settings_for())
    env.reset()
    env.close()
    launches = env.host.launches
    pids = _browser_pids()
    assert pids, "no Playwright Chromium found"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while env.host.browser.is_connected() and time.monotonic() < deadline:
        time.sleep(0.1)
    again = WebEnv(make_task(site), settings_for())
    try:
        assert "Fixture site" in again.reset()[0]
        assert again.host.launches == launches + 1
    finally:
        again.close()


def test_a_browser_path_with_no_file_names_the_path_and_the_package(tmp_path):
    """LORALOOP_CHROMIUM_PATH naming no file (the headless shell not installed): the error names the path, the
    Debian package and the setting, where Playwright alone says only that the executable does not exist."""
    missing = tmp_path / "chromium-headless-shell"
    host = BrowserHost(str(missing))
    try:
        with pytest.raises(
            EnvironmentFailure, match=rf"at {missing}; no such file: .*chromium-headless-shell.*CHROMIUM_PATH"
        ):
            host.run(host.new_context(), timeout=60)
    finally:
        host.run(host._close(), timeout=30)
        host.loop.call_soon_threadsafe(host.loop.stop)


def test_driver_that_cannot_start_names_the_cause(monkeypatch, tmp_path):
    """A Node driver that cannot run (here: a real file that is not executable) fails with its path
    and the reason, where Playwright alone only says that the driver's pipe closed."""
    node = tmp_path / "node"
    node.write_text("not a program\n")
    monkeypatch.setenv("PLAYWRIGHT_NODEJS_PATH", str(node))
    host = BrowserHost(Settings().chromium_path)
    try:
        with pytest.raises(EnvironmentFailure, match=r"driver did not start.*node: \[Errno 13\] Permission denied"):
            host.run(host.new_context(), timeout=60)
    finally:
        host.loop.call_soon_threadsafe(host.loop.stop)


def _running(pid: int) -> bool:
    """Whether the process exists and is not a zombie (it may vanish while we look)."""
    try:
        return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    except OSError:
        return False


def test_worker_shutdown_closes_the_browser(site, settings_for):
    """close_browsers (run on Celery's worker_shutdown) ends this process's Chromium; a later
    episode gets a new browser host."""
    env = WebEnv(make_task(site), settings_for())
    env.reset()
    env.close()
    pids = _browser_pids()
    assert pids, "no Playwright Chromium found"
    close_browsers()
    deadline = time.monotonic() + 10
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _browser_pids()
    again = WebEnv(make_task(site), settings_for())
    try:
        assert again.host is not env.host and "Fixture site" in again.reset()[0]
    finally:
        again.close()
