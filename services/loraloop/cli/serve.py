"""`loraloop serve vllm|sites|task-server|rollout-api|gateway`: every command that serves, in one group.

The old top-level names `serve-api` and `rollout-api` stay one release as hidden aliases that say so.
"""

from __future__ import annotations

from pathlib import Path

import typer

from loraloop import defaults
from loraloop.cli.common import REGISTRY, console
from loraloop.errors import LoraloopError
from loraloop.settings import get_settings

app = typer.Typer(
    help="Serve: the local vLLM, the bundled task sites, the Task Server API, the rollout API, the recording gateway.",
    no_args_is_help=True,
)


@app.command("vllm")
def serve_vllm(
    action: str = typer.Argument("start", help="start | stop"), port: int | None = typer.Option(None, "--port")
) -> None:
    """Start (LoRA on, runtime loading on) or stop the local vLLM CPU server."""
    from loraloop.serve import vllm_server

    settings = get_settings()
    if action == "start":
        typer.echo(vllm_server.start(settings, port=port))
    elif action == "stop":
        typer.echo("stopped" if vllm_server.stop(port or settings.vllm_port) else "not running")
    else:
        raise LoraloopError(f"serve vllm: action must be start or stop, got {action!r}")


@app.command("sites")
def serve_sites(host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8090, "--port")) -> None:
    """Serve the bundled task sites (shop, mail) with REAL's /config and /finish protocol."""
    try:
        from loraloop_sites import serve
    except ImportError as exc:
        raise LoraloopError(
            f"serve sites: cannot import the task sites ({exc}): "
            "pip install -e services/loraloop_sites (make setup does)"
        ) from exc

    serve(host, port)


@app.command("task-server")
def task_server(
    task: str = typer.Option("os-dev", "--task", help="task name reported by /api/health"),
    task_registry: Path = REGISTRY,
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(5000, "--port"),
    idle_timeout: float = typer.Option(300.0, "--idle_timeout", help="seconds before an idle episode ends"),
    run_id: str | None = typer.Option(
        None, "--run_id", "--run-id", help="trajectory folder (default: today's date, UTC)"
    ),
) -> None:
    """Serve a registry through the Task Server API (AReaL's TaskServerWorkflow).

    With LORALOOP_BROKER_URL set, episodes live in Redis: run several replicas behind a load
    balancer, restart them at will. Every episode is stored under trajectories/<task>/<run_id>/.
    """
    import uvicorn

    from loraloop.rollout.preflight import require_free_port
    from loraloop.task_registry import load_registry
    from loraloop.taskserver.app import create_app

    require_free_port(host, port)  # before anything is built or a banner printed
    api = create_app(load_registry(task_registry), task, get_settings(), idle_timeout, run_id)
    console.print(f"Task server {task}: http://{host}:{port}/api (health: /api/health)")
    uvicorn.run(api, host=host, port=port, log_level="warning")


@app.command("rollout-api")
def rollout_api(
    host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(defaults.ROLLOUT_API_PORT, "--port")
) -> None:
    """Serve the rollout API (jobs, health, /metrics, OpenAPI at /docs) over LORALOOP_BROKER_URL."""
    import uvicorn

    from loraloop.rollout.preflight import require_free_port
    from loraloop.service.api.main import serving_app

    api = serving_app(get_settings())
    require_free_port(host, port)
    console.print(f"rollout API: http://{host}:{port}/api/jobs (docs: /docs, metrics: /metrics)")
    uvicorn.run(api, host=host, port=port, log_level="warning")


@app.command("gateway")
def gateway(
    host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(defaults.GATEWAY_PORT, "--port")
) -> None:
    """Serve the recording OpenAI-compatible gateway: an outside agent's calls to vLLM become episodes.

    Sessions start with LORALOOP_GATEWAY_ADMIN_KEY (POST /rl/start_session); with LORALOOP_BROKER_URL set
    they live in Redis, so a restarted gateway goes on with them.
    """
    import uvicorn

    from loraloop.rollout.preflight import require_free_port
    from loraloop.serve.gateway.app import create_app

    api = create_app(get_settings())
    require_free_port(host, port)
    console.print(
        f"gateway: http://{host}:{port}/v1 (OpenAI-compatible) -> {get_settings().vllm_url}; "
        "sessions: /rl/start_session"
    )
    uvicorn.run(api, host=host, port=port, log_level="warning")


def renamed(old: str, new: str) -> dict:
    """Command options for a hidden alias kept one release: Click says on stderr what to type instead."""
    return {
        "name": old,
        "hidden": True,
        "deprecated": f"Use `loraloop {new}`; `loraloop {old}` goes in the next release.",
    }
