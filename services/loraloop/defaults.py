"""Defaults written once: the CLI options, the job request, the loop and the Makefile all take them from here."""

SEED = 42  # task sampling seed (`--seed`): which tasks a --sample_size draws
TASK_SEED = 123  # base of per-rollout seeds (`--task_seed`): task_seed + task_index*1000 + attempt
TASK_REGISTRY = "configs/tasks/os"  # `--task_registry`: the bundled shell tasks
EXPERIMENTS = "configs/experiments.yaml"  # `--config` / LORALOOP_EXPERIMENTS_PATH
ROLLOUT_API_PORT = 8080  # `loraloop serve rollout-api` (and the viewer at /ui) on 127.0.0.1
GATEWAY_PORT = 8070  # `loraloop serve gateway`: the recording OpenAI-compatible gateway
