"""The rollout service's contracts without a broker: job requests, credentials kept out of URLs, the API's schema."""

import pytest

from loraloop.service.book import without_credentials
from loraloop.service.models import JobRequest
from loraloop.settings import Settings


def test_job_request_names_bad_values():
    with pytest.raises(ValueError, match="rollouts_per_task"):
        JobRequest(experiment="teacher", rollouts_per_task=0)
    with pytest.raises(ValueError, match=r"run_id\n.*'../x' is not an identifier \(letters, digits"):
        JobRequest(experiment="teacher", run_id="../x")


def test_broker_url_is_shown_without_its_password():
    assert without_credentials("redis://:s3cret@redis:6379/0") == "redis://redis:6379/0"
    assert without_credentials("redis://user:pw@127.0.0.1/1") == "redis://127.0.0.1/1"


def test_openapi_declares_a_model_for_every_response():
    """/openapi.json: every route's success has a schema (not `{}`) and its errors the one-line error body."""
    from fastapi.testclient import TestClient

    from loraloop.service.api.main import create_app

    spec = TestClient(create_app(Settings(broker_url="redis://127.0.0.1:9/0"))).get("/openapi.json").json()
    routes = {(method.upper(), path) for path, ops in spec["paths"].items() for method in ops}
    assert routes == {
        ("POST", "/api/jobs"),
        ("GET", "/api/jobs"),
        ("GET", "/api/jobs/{run_id}"),
        ("POST", "/api/jobs/{run_id}/cancel"),
        ("GET", "/api/health"),
        ("GET", "/metrics"),
    }
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            where = f"{method.upper()} {path}"
            success = [code for code in op["responses"] if code.startswith("2")]
            assert success == (["201"] if where == "POST /api/jobs" else ["200"]), where
            for body in op["responses"][success[0]]["content"].values():
                assert body["schema"] not in ({}, None), where
            errors = [code for code in op["responses"] if code[0] in "45" and code != "422"]
            assert errors, f"{where} documents no error response"
            for code in errors:
                assert op["responses"][code]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/ErrorMessage"
                }, (where, code)
    status = spec["components"]["schemas"]["JobStatus"]["properties"]
    assert {
        "state",
        "total",
        "done",
        "solved",
        "failed",
        "skipped",
        "success_rate",
        "episodes_per_min",
        "recent_errors",
        "request",
        "store_url",
    } <= set(status)
    assert spec["paths"]["/api/jobs"]["post"]["security"] and "HTTPBearer" in spec["components"]["securitySchemes"]
