"""Forward passes of the trainer's model outside training: the proximal policy's logprobs (rl_trainer) and the
published adapter's fingerprint (verify_logprobs) both need the model in eval mode (no dropout), without
gradients, and back in the mode it was in afterwards, even when a pass fails."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def scoring(model) -> Iterator[None]:
    """Run the block with `model` in eval mode and no gradient; restore its training mode after."""
    import torch

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)
