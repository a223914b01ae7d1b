"""The trajectory viewer (/ui of the rollout API), served for real (uvicorn, Redis behind the API) over a store
of episodes, and driven in headless Chromium with Playwright: login with the API's token, runs, a run's
episodes and its filters, an episode's steps with its screenshot, two episodes side by side, a corrupt
episode. Every page is screenshotted into volumes/reports/viewer-test/."""

import re
import threading
import time
from pathlib import Path

import httpx
import pytest

from loraloop.evaluate.report import markdown_table, summarise
from loraloop.settings import Settings
from loraloop.store.backends import FileStore
from loraloop.store.browse import index_key, run_index
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import EpisodeRecorder

TOKEN = "viewer-secret-token"
SHOTS = Path("volumes/reports/viewer-test")
# a 1x1 PNG: the screenshot a web step stored beside its episode
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e2f4e1a10000000049454e44ae426082"
)


def stored(store, mode, run, task, attempt, success, model, steps, error=None):
    rec = EpisodeRecorder(store, mode, run, task, attempt)
    rec.add(
        EpisodeStart(
            task_id=task,
            mode=mode,
            run_id=run,
            attempt_idx=attempt,
            worker_model=model,
            first_observation=f"Task: {task} <b>bold?</b>",
            expected="3",
        )
    )
    for i, (reply, action) in enumerate(steps):
        rec.add(
            Step(
                step_idx=i,
                observation=f"The output of the OS:\n\n<script>alert({i})</script>",
                raw_output=reply,
                action=action.split(":")[0],
                action_text=action,
                action_source="worker",
                model=model,
                reward=1.0 if success and i == len(steps) - 1 else 0.0,
                last_action_error="format" if action == "invalid" else None,
                screenshot=f"trajectories/{mode}/{run}/{task}__attempt_{attempt}/step_000.png" if i == 0 else None,
            )
        )
    rec.add(
        EpisodeEnd(
            success=success,
            reward=float(success),
            total_steps=len(steps),
            error=error,
            status="env_error" if error else "completed",
            answer="3" if success else "4",
        )
    )
    rec.flush()
    store.put_bytes(f"trajectories/{mode}/{run}/{task}__attempt_{attempt}/step_000.png", PNG)


@pytest.fixture
def viewer(tmp_path, redis_url):
    """The rollout API with a token, on a free port, over a file store of 2 runs (one with 60 episodes)."""
    import uvicorn

    from loraloop.service.api.main import create_app

    store = FileStore(tmp_path / "store")
    for attempt in range(3):
        stored(
            store,
            "smollm_bc",
            "run-b",
            "test-count-ext-00001",
            attempt,
            attempt != 1,
            "smollm_bc-v2",
            [("Act: bash\n\n```bash\nls | wc -l\n```", "bash: ls | wc -l"), ("Act: answer(3)", "answer: 3")],
        )
    stored(
        store,
        "smollm_bc",
        "run-b",
        "test-grep-count-00000",
        0,
        False,
        "smollm_bc-v1",
        [("Think: hm", "invalid")],
        error="container died",
    )
    (tmp_path / "store" / "trajectories/smollm_bc/run-b/test-broken-00000__attempt_0.jsonl").write_text("{not json\n")
    for n in range(60):
        stored(
            store,
            "smollm_zero",
            "run-a",
            f"test-files-{n:05d}",
            0,
            n % 3 == 0,
            "SmolLM2-135M-Instruct",
            [("Act: answer(1)", "answer: 1")],
        )
    settings = Settings(broker_url=redis_url, store_url=store.url, api_token=TOKEN)
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the rollout API did not start"
        time.sleep(0.05)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    yield f"http://{host}:{port}", store
    server.should_exit = True
    thread.join(timeout=10)


def test_bad_keys_missing_runs_and_the_token(viewer):
    url, store = viewer
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, timeout=30) as client:
        first = client.get("/ui", follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"].startswith("/ui/login")
        assert client.get("/ui", headers={"Authorization": "Bearer wrong"}, follow_redirects=False).status_code == 303
        assert client.get("/ui", headers=auth).status_code == 200
        for key in (
            "trajectories/../../etc/passwd.jsonl",
            "trajectories/smollm_bc/run-b/../../../x.jsonl",
            "indexes/smollm_bc/run-b.json",
            "trajectories/smollm_bc/run-b/nope__attempt_0.jsonl",
        ):
            response = client.get("/ui/episode", params={"key": key}, headers=auth)
            assert response.status_code == 404, key
            assert "root:" not in response.text
        assert client.get("/ui/file", params={"key": "trajectories/../secret.png"}, headers=auth).status_code == 404
        for path in (
            "/ui/runs/smollm_bc/no-such-run",
            "/ui/runs/%2E%2E/etc",
            "/ui/runs/smollm_bc/%2E%2E",
            "/ui/runs/smollm_bc/..%5C..",
        ):  # unknown, or no name a run is stored under: 404
            response = client.get(path, headers=auth)
            assert response.status_code == 404 and str(store.root) not in response.text, path
        assert not any(store.list("indexes/"))  # and nothing written for them
        assert client.get("/ui/compare", params={"key": "trajectories/a.jsonl"}, headers=auth).status_code == 400
        corrupt = client.get(
            "/ui/episode",
            headers=auth,
            params={"key": "trajectories/smollm_bc/run-b/test-broken-00000__attempt_0.jsonl"},
        )
        assert corrupt.status_code == 200 and "corrupt episode" in corrupt.text and "not JSON" in corrupt.text
        page = client.get(
            "/ui/episode",
            headers=auth,
            params={"key": "trajectories/smollm_bc/run-b/test-count-ext-00001__attempt_0.jsonl"},
        )
        assert "&lt;script&gt;alert(0)&lt;/script&gt;" in page.text and "<script>alert" not in page.text
        assert TOKEN not in page.text and TOKEN not in client.get("/ui/login").text


def test_eval_table_counts_link_to_the_episodes_behind_them(viewer):
    """Each count of an eval table (episodes, solved, errors) opens a viewer page listing that many episodes."""
    url, store = viewer
    table = markdown_table(summarise(store, [("smollm_zero", "run-a"), ("smollm_bc", "run-b")]), url)
    # run-a: 60 episodes, 20 solved, no error; run-b: 4 episodes (+1 corrupt, left out of the figures), 2 solved,
    # 1 error
    links = re.findall(r"\[(\d+)\]\((http[^)]+)\)", table)
    assert [int(n) for n, _ in links] == [60, 20, 4, 1, 2, 1] and "[4](" in table and "(+[1](" in table
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for count, link in links:
            listed = int(count) + (1 if link.endswith("/run-b") else 0)  # the run's page lists the corrupt one too
            page = client.get(link)
            assert page.status_code == 200 and f'<p class="muted">{listed} of ' in page.text, link


def test_the_run_index_is_written_once_and_rebuilt_when_the_run_grows(viewer):
    _, store = viewer
    first = run_index(store, "smollm_bc", "run-b")
    assert [e.outcome for e in first].count("corrupt") == 1 and len(first) == 5
    written = store.get_bytes(index_key("smollm_bc", "run-b"))
    assert (
        run_index(store, "smollm_bc", "run-b") == first and store.get_bytes(index_key("smollm_bc", "run-b")) == written
    )
    stored(
        store, "smollm_bc", "run-b", "test-count-ext-00002", 0, True, "smollm_bc-v2", [("Act: answer(3)", "answer: 3")]
    )
    assert len(run_index(store, "smollm_bc", "run-b")) == 6


def test_pages_in_chromium(viewer, chromium):
    from playwright.sync_api import sync_playwright

    url, _ = viewer
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}/ui/runs/smollm_zero/run-a")
        assert "/ui/login" in page.url  # no token yet: the form
        page.screenshot(path=str(SHOTS / "login.png"))
        page.fill("input[name=token]", "wrong")
        page.click("button[type=submit]")
        assert page.locator(".failed").inner_text().startswith("That token")
        page.fill("input[name=token]", TOKEN)
        page.click("button[type=submit]")
        assert page.url.endswith("/ui/runs/smollm_zero/run-a")  # back to the page asked for
        assert page.locator("#episodes tr").count() == 1 + 50 and page.locator("#next").count() == 1  # paged
        page.select_option("select[name=outcome]", "solved")
        page.click("form.filters button")
        assert page.locator("#episodes tr").count() == 1 + 20  # n % 3 == 0 of 60
        assert "20 of 60 episodes match" in page.content()
        page.screenshot(path=str(SHOTS / "run.png"), full_page=True)

        page.goto(f"{url}/ui")
        assert page.locator("#runs tr").count() == 3
        page.screenshot(path=str(SHOTS / "runs.png"), full_page=True)
        page.select_option("select[name=mode]", "smollm_zero")
        page.click("form.filters button")
        assert page.locator("#runs tr").count() == 2 and "1 of mode smollm_zero" in page.content()
        page.goto(f"{url}/ui")
        page.click("text=run-b")
        page.select_option("select[name=model]", "smollm_bc-v2")
        page.click("form.filters button")
        assert page.locator("#episodes tr").count() == 1 + 3
        page.fill("input[name=task]", "grep")
        page.select_option("select[name=model]", "")
        page.click("form.filters button")
        assert page.locator("#episodes tr").count() == 1 + 1 and page.locator("td.error").count() == 1
        page.goto(f"{url}/ui/runs/smollm_bc/run-b?task=count-ext")
        boxes = page.locator("input[name=key]")
        boxes.nth(0).check()
        boxes.nth(1).check()
        page.click("#compare")
        assert page.locator("section").count() == 2 and page.locator(".solved").count() == 1
        assert page.locator(".failed").count() == 1
        page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)

        page.goto(f"{url}/ui/runs/smollm_bc/run-b?task=count-ext")
        page.click("text=test-count-ext-00001 >> nth=0")
        assert page.locator(".step").count() == 2
        assert "bash: ls | wc -l" in page.locator("#step-0").inner_text()
        assert page.locator("img.shot").evaluate("img => img.complete && img.naturalWidth") == 1
        page.screenshot(path=str(SHOTS / "episode.png"), full_page=True)
        browser.close()
    for name in ("login", "runs", "run", "episode", "compare"):
        assert (SHOTS / f"{name}.png").stat().st_size > 5000
