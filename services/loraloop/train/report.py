"""Training outputs people compare: metrics JSON and a PNG loss curve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_training_report(log_history: list[dict], output_dir: Path, extra: dict) -> dict:
    """Save training_metrics.json and loss.png from the trainer's log history; return the metrics."""
    losses = [(h["step"], h["loss"]) for h in log_history if "loss" in h]
    final: dict[str, Any] = next((h for h in reversed(log_history) if "train_runtime" in h), {})
    metrics = {
        "first_loss": losses[0][1] if losses else None,
        "final_loss": losses[-1][1] if losses else None,
        "steps": losses[-1][0] if losses else 0,
        "train_runtime_s": final.get("train_runtime"),
        "train_loss": final.get("train_loss"),
        **extra,
    }
    (output_dir / "training_metrics.json").write_text(json.dumps(metrics, indent=2))
    if losses:
        from loraloop.charts import loss_chart

        loss_chart(losses, output_dir / "loss.png", extra.get("algorithm", "training"))
    return metrics
