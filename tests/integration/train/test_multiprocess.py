"""Several processes through `accelerate launch` (DDP; gloo on the CPU, NCCL on GPUs), the trainers unchanged: one RL
optimiser step of the same four turns in one process and shared by two gives the same LoRA weights. Plain SGD, so a
wrong scale shows (Adam's first step is nearly sign(gradient)). Before the RL trainer counted the step's tokens across
processes and scaled each process's loss by their number, each process divided by its own tokens and DDP's mean of
the gradients halved the step: the two-process step moved the weights by another amount. The two processes take
their turns' proximal logprobs from the step's own forward pass (`first_step_rows`, as `train rl` does), the one
process from a pass before it."""

import json
import os
import subprocess
import sys

import pytest
import torch

from tests.helpers import MODEL, ROOT, free_port

ACCELERATE = [sys.executable, "-m", "accelerate.commands.launch"]


def launched(out, micro: int) -> dict[str, torch.Tensor]:
    """The LoRA weights after tests/rl_tiny.py's step shared by two processes (each in passes of `micro`)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'services'}", "OMP_NUM_THREADS": "1"}
    # --multi_gpu is accelerate's torchrun launcher (its --cpu runs one process): with no GPU, the processes train on
    # the CPU and talk over gloo
    command = [*ACCELERATE, "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no"]
    command += ["--dynamo_backend", "no", "--main_process_port", str(free_port()), "-m", "tests.rl_tiny"]
    proc = subprocess.run([*command, str(out), str(micro)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return torch.load(out)


@pytest.mark.timeout(900)
def test_an_rl_step_shared_by_two_processes_is_the_one_process_step(tmp_path):
    from loraloop.train.rl_trainer import Correction
    from tests.rl_tiny import tiny_policy, trained_lora

    one = trained_lora(tmp_path, micro=4, fused=False, correction=Correction("token", 2.0))  # here: one process
    two = launched(tmp_path / "two.pt", micro=1)  # 2 turns a process, in passes of one
    start = {n: p.detach() for n, p in tiny_policy(False).named_parameters() if "lora_" in n}
    assert set(one) == set(two) == set(start)
    assert any(not torch.allclose(one[n], start[n]) for n in start), "the step moved nothing"
    for name in one:
        torch.testing.assert_close(two[name], one[name], rtol=1e-4, atol=1e-6, msg=name)


def tiny_model(folder):
    """tests/rl_tiny.py's tiny Llama over SmolLM2's tokenizer, saved with the tokenizer's files beside it."""
    from transformers import AutoTokenizer

    from tests.rl_tiny import tiny_llama

    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    tiny_llama(len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.timeout(900)
def test_bc_shared_by_two_processes_takes_the_one_process_step(tmp_path):
    """`loraloop train bc` as users launch it on several GPUs (`accelerate launch -m loraloop.cli train bc ...`): one
    SGD step over four rows of different lengths, 4 a process in one process and 2 a process in two, gives the same
    adapter and the same logged loss."""
    from safetensors.torch import load_file

    model = tiny_model(tmp_path / "tiny")
    data = tmp_path / "bc.jsonl"
    texts = [("ls -la", "echo done"), ("count the files in /srv", "find /srv -type f | wc -l"),
             ("show the date", "date"), ("which user am I and where", "whoami; pwd; ls /home | head -n 3")]  # fmt: skip
    data.write_text("".join(json.dumps({"prompt": p, "completion": c}) + "\n" for p, c in texts))
    results = {}
    for processes in (1, 2):
        out = tmp_path / f"bc-{processes}"
        args = ["-m", "loraloop.cli", "train", "bc", "--base_model", str(model), "--dataset_path", str(data),
                "--output_dir", str(out), "--epochs", "1", "--lr", "0.5", "--optim", "sgd",
                "--batch_size", str(4 // processes), "--lora_r", "4"]  # fmt: skip
        launcher = ["--multi_gpu"] if processes > 1 else []
        command = [*ACCELERATE, *launcher, "--num_processes", str(processes), "--num_machines", "1"]
        command += ["--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port())]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "services"), "OMP_NUM_THREADS": "1", "LORALOOP_DTYPE": "float32"}
        proc = subprocess.run([*command, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        metrics = json.loads((out / "training_metrics.json").read_text())
        results[processes] = (load_file(out / "adapter_model.safetensors"), metrics)
    (one, one_metrics), (two, two_metrics) = results[1], results[2]
    assert one_metrics["steps"] == two_metrics["steps"] == 1, (one_metrics, two_metrics)
    assert set(one) == set(two) and one
    moved = [n for n in one if "lora_B" in n and one[n].abs().sum() > 0]  # PEFT starts B at zero
    assert moved, "the step moved nothing"
    for name in one:
        torch.testing.assert_close(two[name], one[name], rtol=1e-4, atol=1e-6, msg=name)
    assert two_metrics["first_loss"] == pytest.approx(one_metrics["first_loss"], rel=1e-4), (one_metrics, two_metrics)
