"""Token-exact trajectories: a real multi-turn shell episode against the real vLLM CPU server stores,
per model step, the ids vLLM sampled and saw, their logprobs and the sampling parameters sent."""

from pathlib import Path

import pytest

from loraloop.datasets.states import states
from loraloop.rollout.episode import run_episode
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.store import open_store
from loraloop.store.trajectories import parse_episode

MODEL = Path("volumes/models/SmolLM2-135M-Instruct")
REGISTRY = "configs/tasks/os"
TASK = "test-count-ext-00000"  # SmolLM2 does not solve it in one step: 3 model turns at max_steps 3


@pytest.mark.usefixtures("docker_ready")
def test_stored_steps_hold_the_sampled_tokens(vllm_url, settings_for):
    from transformers import AutoTokenizer

    settings = settings_for(vllm_url=vllm_url)
    spec = EpisodeSpec(
        mode="exact",
        run_id="r",
        task_registry=REGISTRY,
        task_id=TASK,
        task_index=0,
        attempt=0,
        seed=7,
        task_seed=0,
        temperature=0.0,
        policy="openai",
        model=None,
        max_steps=3,
    )
    summary = run_episode(spec, settings)
    assert summary.error is None, summary
    store = open_store(settings=settings)
    episode = parse_episode(summary.key, store.get_bytes(summary.key))
    sent = {"temperature": 0.0, "max_tokens": settings.max_tokens, "seed": 7, "stop": ["The output of the OS"]}
    assert episode.start.sampling == sent and episode.start.adapter is None  # the base model
    assert len(episode.steps) >= 2

    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    for step, state in zip(episode.steps, states(episode, settings.prompt_char_budget), strict=True):
        assert step.sampling == sent and step.adapter is None
        # the prompt: exactly the chat template over the messages the policy was given
        chat = tokenizer.apply_chat_template(state.prompt, add_generation_prompt=True, tokenize=False)
        assert tokenizer.decode(step.prompt_token_ids) == chat
        assert step.prompt_token_ids == tokenizer(chat, add_special_tokens=False)["input_ids"]
        # the completion: its ids decode to the stored reply (vLLM cuts a stop string from the text only)
        ids = step.completion_token_ids
        decoded = tokenizer.decode(ids, skip_special_tokens=True)
        rest = decoded[len(step.raw_output) :]
        assert decoded.startswith(step.raw_output) and (rest == "" or rest.startswith(sent["stop"][0])), step.step_idx
        assert ids[-1] == tokenizer.eos_token_id or rest or len(ids) == settings.max_tokens
        assert len(step.logprobs) == len(ids) == step.completion_tokens > 0
        assert all(lp <= 0 for lp in step.logprobs)
