"""All runtime settings in one place, read from LORALOOP_* environment variables and .env."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from loraloop.defaults import EXPERIMENTS
from loraloop.paths import in_project


class Settings(BaseSettings):
    """Where loraloop's services are and how episodes run; every field is LORALOOP_<NAME>.

    The default folders (store, model, adapters, vLLM's virtualenv) are the checkout's, wherever the
    command runs; a relative path given in the environment is the current folder's. The checkout's
    .env is read, then the current folder's, which wins.
    """

    model_config = SettingsConfigDict(env_prefix="LORALOOP_", env_file=(in_project(".env"), ".env"), extra="ignore")

    # Trajectory and adapter store: file:///path or s3://bucket/prefix
    store_url: str = Field(default_factory=lambda: f"file://{in_project('volumes/store')}")
    s3_endpoint_url: str | None = Field(None, description="the S3 server of an s3:// store (MinIO or any S3)")
    s3_access_key: str | None = Field(None, description="the S3 access key")
    s3_secret_key: str | None = Field(None, description="the S3 secret key")
    s3_region: str = Field("us-east-1", description="the S3 region")
    store_retry_s: float = Field(
        120.0,
        ge=0,
        description="how long a store write or read waits out an unreachable "
        "S3 server, trying again with backoff, before it fails",
    )

    # Celery broker; empty means the embedded default (episodes run in-process).
    broker_url: str = ""

    # OpenAI-compatible model server (vLLM).
    vllm_url: str = "http://127.0.0.1:8000/v1"
    # Every vLLM that publish must make serve a new adapter (comma-separated; default: vllm_url).
    publish_vllm_urls: str = ""
    publish_max_logprob_diff: float = Field(
        0.5,
        gt=0,
        description="publish refuses a version whose served logprobs differ from the trainer's own on the likely "
        "first reply tokens of its verification prompts by more than this",
    )
    vllm_api_key: str = Field("EMPTY", description="the API key sent to vLLM")
    base_model_name: str = Field("SmolLM2-135M-Instruct", description="the base model's served name")
    model_dir: Path = Field(
        default_factory=lambda: in_project("volumes/models/SmolLM2-135M-Instruct"),
        description="the base model's folder (Hugging Face layout) vLLM and training load",
    )
    vllm_python: Path = Field(
        default_factory=lambda: in_project(".venv-vllm/bin/python"),
        description="the Python of vLLM's own virtualenv (`loraloop serve vllm`)",
    )
    vllm_port: int = Field(
        8000, description="the port `loraloop serve vllm` starts vLLM on (vllm_url follows it unless set too)"
    )
    max_lora_rank: int = Field(16, description="vLLM's --max-lora-rank; publish and `train rl` refuse a higher rank")
    max_loras: int = Field(
        4,
        description="vLLM's --max-loras (adapters served at once); `train rl` refuses a --max_staleness K needing more "
        "than K+1",
    )
    vllm_block_size: int = Field(
        32,
        gt=0,
        multiple_of=32,
        description="vLLM CPU's --block-size, the tokens of a KV cache block and of a prefix-cache hit; a multiple of "
        "32, the CPU attention kernel's unit (vLLM's own default there, 128, recomputes up to 127 tokens of every "
        "turn's cached conversation: bench/vllm_block_size.py)",
    )
    # auto: bfloat16 where the hardware computes it natively (CUDA with bf16, CPUs with AVX512-BF16 or
    # AMX), else float32 (loraloop.hardware); vLLM and training both load models in it.
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    # Declared before train_gpu_fraction, whose validator reads it.
    vllm_gpu_memory_utilization: float = Field(
        0.9,
        gt=0,
        le=1,
        description="the share of its GPU the stack's vLLM takes (its --gpu-memory-utilization; compose's "
        "VLLM_GPU_MEMORY_UTILIZATION is read too), so that a trainer sharing that GPU is refused a split that "
        "cannot fit",
        validation_alias=AliasChoices("LORALOOP_VLLM_GPU_MEMORY_UTILIZATION", "VLLM_GPU_MEMORY_UTILIZATION"),
    )
    # The share of the GPU's memory training may take (None: all), so that the trainer and a vLLM started
    # with --gpu-memory-utilization fit on one GPU together (docs/gpu.md, "One GPU").
    train_gpu_fraction: float | None = Field(default=None, gt=0, le=1)

    @field_validator("train_gpu_fraction", mode="before")
    @classmethod
    def _empty_is_whole_gpu(cls, fraction: object) -> object:
        """An empty LORALOOP_TRAIN_GPU_FRACTION (.env.example's, and compose.train.yaml's when .env leaves it out)
        means no cap; without this every command read such an .env and failed parsing '' as a number."""
        return None if isinstance(fraction, str) and not fraction.strip() else fraction

    @field_validator("train_gpu_fraction")
    @classmethod
    def _split_fits(cls, fraction: float | None, info: ValidationInfo) -> float | None:
        """A trainer share set means the trainer shares vLLM's GPU (docs/gpu.md, "One GPU"): the two shares must
        add up to at most the whole card, or one of them runs out of memory only after minutes of loading. `make up`
        checks the same rule in scripts/env.sh, which runs before any virtualenv exists."""
        served = info.data.get("vllm_gpu_memory_utilization")
        if fraction is not None and served is not None and round(fraction + served, 9) > 1:
            raise ValueError(
                f"LORALOOP_TRAIN_GPU_FRACTION {fraction} + VLLM_GPU_MEMORY_UTILIZATION {served} = "
                f"{fraction + served:.2f} of one GPU: lower either (the sum at most 1), or leave "
                "LORALOOP_TRAIN_GPU_FRACTION empty when the trainer has GPUs of its own"
            )
        return fraction

    # Where published adapters are unpacked for vLLM, and that folder as the vLLM process sees it
    # (the same path on one machine; e.g. /adapters inside the stack's vllm container).
    adapters_dir: Path = Field(default_factory=lambda: in_project("volumes/adapters"))
    vllm_adapters_dir: str | None = Field(
        None, description="adapters_dir as the vLLM process sees it (unset: the same path)"
    )
    request_timeout_s: float = Field(
        120.0, description="a model request without a reply in this time fails (the episode's status: model_timeout)"
    )
    api_max_body_bytes: int = Field(
        1 << 20, ge=1024, description="largest request body the rollout API and the Task Server take (413 past it)"
    )
    api_max_in_flight: int = Field(
        32,
        ge=1,
        le=38,
        description="episode starts and steps the Task Server runs at once (429 past it; under Starlette's 40 threads)",
    )
    max_tokens: int = Field(192, description="the longest reply a model request asks for (max_tokens)")
    prompt_char_budget: int = Field(
        4000, description="past this many characters of history a prompt drops its oldest turns"
    )

    # Shell environment.
    os_env_image: str = Field("loraloop/os-env:latest", description="a shell task's image when it names none")
    container_memory: str = Field("512m", description="memory of a shell container, without swap")
    container_pids: int = Field(256, description="processes a shell container may hold at once")
    container_cpus: float = Field(1.0, description="CPUs a shell container may use")
    container_max_file_mb: int = Field(512, description="largest file a command may write (ulimit fsize)")
    container_tmp_mb: int = Field(256, description="size of the tmpfs mounted on /tmp")
    container_disk: str = Field("", description="writable-layer cap (--storage-opt size=; overlay2 on xfs+pquota)")
    project: str = Field("", description="Compose project: labels environment containers for `make down`")
    pool_size: int = Field(0, description="pre-started containers kept ready per image in each process")
    reap_interval_s: float = Field(300.0, description="how often a worker removes containers of dead processes")
    command_timeout_s: float = Field(
        20.0, description="a shell command running longer is killed; the shell stays usable"
    )
    init_timeout_s: float = Field(
        300.0,
        description="longest a task's init script may run (AgentBench sets none; "
        "published inits sleep 60 s or install packages)",
    )
    output_cap_bytes: int = Field(
        65536, description="a command's output is cut past this many bytes before it reaches Python"
    )

    kinds: str = Field(
        "",
        description="env kinds of one's own, `name=module` joined by `,` (each module defines `KIND`, an "
        "EnvKind; docs/envs/index.md): the one line that registers a kind",
    )
    # Web environment (Playwright + Chromium) and REAL's llm_boolean judge.
    chromium_path: str = Field(
        "/usr/bin/chromium-headless-shell",
        description="the Chromium Playwright drives: Debian's headless shell (package chromium-headless-shell, the "
        "build Playwright's own headless mode uses), a third of the full browser's CPU a MiniWoB++ episode; "
        "/usr/bin/chromium (package chromium) for the full one",
    )
    sites_url: str = Field("http://127.0.0.1:8090", description="where the bundled sites run (service `sites`)")
    miniwob_url: str = Field(
        "",
        description="where MiniWoB++'s pages are served, ending in `miniwob/` (BrowserGym's "
        "MINIWOB_URL is read too); empty: each process serves them on loopback",
        validation_alias=AliasChoices("LORALOOP_MINIWOB_URL", "MINIWOB_URL"),
    )
    web_action_timeout_ms: int = Field(
        5000,
        description="longest wait for an element to act on; a navigation the action starts then has the load timeout",
    )
    web_load_timeout_ms: int = Field(15000, description="longest wait for a page to load")
    web_step_timeout_s: float = Field(60.0, description="a step that takes longer fails the episode")
    web_axtree_chars: int = Field(6000, description="the accessibility tree is cut past this size")
    judge_url: str = Field("", description="OpenAI-compatible server grading llm_boolean evals")
    judge_model: str = Field("SmolLM2-135M-Instruct", description="the judge's served model name")
    judge_api_key: str = Field("EMPTY", description="the judge's API key")

    # tau2 environment: the user simulator (AReaL's econfig.user_llm / econfig.user_llm_base_url); empty: the
    # stack's vLLM (vllm_url) serving the base model (base_model_name), never an adapter being trained.
    tau2_user_llm: str = Field("", description="the user simulator's served model name")
    tau2_user_llm_base_url: str = Field("", description="the user simulator's OpenAI-compatible URL")
    tau2_user_llm_api_key: str = Field("", description="its API key (empty: vllm_api_key), sent to that URL only")
    tau2_user_llm_allowed_urls: str = Field(
        "",
        description="other user-simulator URLs (comma-separated) a Task "
        "Server client may name in econfig.user_llm_base_url; they get no key",
    )

    # Rollouts.
    concurrency: int = Field(8, description="episodes in flight per process (embedded default)")
    model_concurrency: int = Field(32, description="model requests in flight per process")
    rollout_cpus: str = Field(
        "",
        description="CPUs (taskset syntax: 0, 0-3, 0,2) the embedded executor's episode threads and the shell "
        "containers run on, to keep rollouts off the trainer's cores on one machine; empty: any",
    )
    model_retries: int = Field(4, description="retries (exponential backoff) on 5xx, 429 and connection errors")
    episode_retries: int = Field(
        2,
        ge=0,
        description="times an episode is played again from the start, unstored, "
        "when the model server or the environment failed it (down, 5xx, timeout; env_error)",
    )
    episode_retry_delay_s: float = Field(10.0, ge=0, description="wait before the first replay, doubled each time")
    visibility_timeout_s: int = Field(3600, description="seconds before a dead worker's episode is redelivered")
    # The rollout API (`loraloop serve rollout-api`): when api_url is set the CLI submits jobs there.
    api_url: str = ""
    api_token: str = Field(
        "", description="when set, the rollout API's jobs routes and viewer pages need it (Authorization: Bearer)"
    )
    task_roots: str = Field(
        "configs/tasks,volumes/tasks",
        description="folders (comma-separated; relative ones "
        "the checkout's) a task_registry sent to the rollout API must lie under (400 otherwise)",
    )
    # The Task Server (`loraloop serve task-server`): with a token, every route but /api/health needs it (401).
    task_server_token: str = Field("", description="the bearer token Task Server clients send (empty: none asked)")
    # The recording gateway (`loraloop serve gateway`): an outside agent's OpenAI-compatible traffic as episodes.
    gateway_admin_key: str = Field(
        "",
        description="the key that starts sessions (/rl/start_session); empty: the "
        "gateway refuses to start (set LORALOOP_GATEWAY_ADMIN_KEY)",
    )
    gateway_experiment: str = Field(
        "gateway", description="the mode (trajectories/<mode>/) of a session that names no experiment"
    )
    gateway_session_timeout_s: float = Field(3600.0, gt=0, description="a session idle this long is stored as expired")
    gateway_max_body_bytes: int = Field(4 << 20, ge=1024, description="largest request body the gateway takes (413)")
    # Relative: the current folder's when it has it, else the checkout's (see loraloop.paths.locate).
    experiments_path: Path = Path(EXPERIMENTS)

    @model_validator(mode="after")
    def _url_follows_port(self) -> Settings:
        """LORALOOP_VLLM_PORT alone moves vllm_url with it: a run that starts vLLM on its port (`loraloop
        agentbench`, `serve vllm`) must roll out against that server, not the default port's (a second run
        beside a first took the first's vLLM and found its model missing). An explicit LORALOOP_VLLM_URL wins."""
        if "vllm_port" in self.model_fields_set and "vllm_url" not in self.model_fields_set:
            self.vllm_url = f"http://127.0.0.1:{self.vllm_port}/v1"
        return self


@lru_cache
def get_settings() -> Settings:
    """Return the process-wide settings, read once."""
    return Settings()
