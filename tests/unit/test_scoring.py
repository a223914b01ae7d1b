"""train/inference.scoring: the forward passes outside training (proximal logprobs, the publish fingerprint) run
in eval mode without gradients, and the model goes back to the mode it was in, even when a pass fails."""

import pytest
import torch

from loraloop.train.inference import scoring


@pytest.mark.parametrize("training", [True, False])
def test_scoring_is_eval_mode_without_gradients_and_restores_the_mode_even_on_failure(training):
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
    model.train(training)
    x = torch.ones(2, 4)
    with scoring(model):
        out = model(x)
        assert not model.training and not out.requires_grad
        assert torch.equal(out, model(x))  # no dropout: the same input gives the same output
    assert model.training is training and model(x).requires_grad
    with pytest.raises(RuntimeError, match="a pass failed"), scoring(model):
        raise RuntimeError("a pass failed")
    assert model.training is training and torch.is_grad_enabled()
