"""The offline task websites on a real server: REAL's protocol over HTTP, runs isolated by cookie, bad
input answered with a 4xx page naming the field, and the state diffs /finish reports.

Needs only this package and httpx (no loraloop): the web tasks played through loraloop's WebEnv are
tested in loraloop's tests/integration/tasks/test_web_tasks.py."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from loraloop_sites import serving
from loraloop_sites.state import collection_diff, initial_final_diff

REPORT_KEYS = {"initialstate", "finalstate", "differences", "initialfinaldiff", "actionhistory"}


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    """The sites on a free loopback port, served from a thread of the test process."""
    with serving() as url:
        yield url


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
            "id": "p10",
            "name": "Wireless Mouse",
            "price": 24.99,
            "quantity": 2,
        }
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
    assert ["star", "open_email", "send_email"] == [
        a["type"] for a in document["actionhistory"] if a["type"] in ("open_email", "star", "send_email")
    ]


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


@pytest.mark.parametrize(
    "site, path, data, field",
    [
        ("shop", "/shop/cart/add", {"product_id": "p1", "quantity": "abc"}, "Quantity"),
        ("shop", "/shop/cart/add", {"product_id": "p1", "quantity": "11"}, "Quantity"),
        ("mail", "/mail/send", {"to": "", "subject": "x", "body": "y"}, "To"),
        ("mail", "/mail/send", {"to": "not-an-address", "subject": "x", "body": "y"}, "To"),
    ],
)
def test_bad_input_is_a_4xx_page_naming_the_field(origin, site, path, data, field):
    with configured(origin, site, f"bad-{uuid.uuid4()}") as client:
        response = client.post(path, data=data)
    assert response.status_code == 400 and 'role="alert"' in response.text
    assert re.search(rf'role="alert"[^>]*>{field}\b', response.text)


def test_checkout_names_the_missing_field(origin):
    with configured(origin, "shop", "checkout-run") as client:
        client.post("/shop/cart/add", data={"product_id": "p1", "quantity": "1"})
        response = client.post(
            "/shop/checkout",
            data={"fullName": "A", "street": "B", "city": "", "zip": "1", "country": "US", "speed": "express"},
        )
    assert response.status_code == 400 and "City: this field is required" in response.text


def test_diffs_of_plain_values_and_collections():
    before = {"a": [{"id": "x", "n": 1}, {"id": "y", "n": 2}], "tags": []}
    after = {"a": [{"id": "x", "n": 5}, {"id": "z", "n": 3}], "tags": ["t"]}
    assert collection_diff(before["a"], after["a"]) == {
        "added": {"0": {"id": "z", "n": 3}},
        "updated": {"x": {"n": 5}},
        "deleted": {"y": {"id": "y", "n": 2}},
    }
    assert initial_final_diff(before, after) == {
        "added": {"a": {"z": {"id": "z", "n": 3}}},
        "updated": {"a": {"x": {"n": 5}}, "tags": ["t"]},
        "deleted": {"a": {"y": {"id": "y", "n": 2}}},
    }


def test_the_package_stands_alone():
    """The sites import nothing of loraloop, so the `sites` image can install this package alone."""
    code = "import sys, loraloop_sites; print(sorted(m for m in sys.modules if m.split('.')[0] == 'loraloop'))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
