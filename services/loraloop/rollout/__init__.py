"""Rollouts: plan episodes (sampler), run each one (episode, runner), store every trajectory."""
