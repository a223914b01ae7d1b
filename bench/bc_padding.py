"""BC's batches drawn at random against batches of like length (`train bc --group_by_length`): the same rows, the
same seed and model, one epoch each in one run; wall time and the rows' tokens (TRL's collator pads each batch to
its longest row, so random batches train through more than the rows hold).

    PYTHONPATH=services .venv/bin/python bench/bc_padding.py volumes/reports/miniwob/datasets/bc.jsonl --rows 64 --out

MiniWoB's BC rows differ in length several times over (bench/results/bc_padding.md has their spread), so random
batches train through more tokens than the rows hold. It always exits 0: a measurement, not a gate.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from results import add_out, machine, report

from loraloop.settings import Settings
from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path, help="a bc.jsonl (prompt and completion rows)")
    parser.add_argument("--rows", type=int, default=64, help="rows sampled (seeded) from the dataset")
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    add_out(parser, "bc_padding")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    sample = random.Random(args.seed).sample(rows, min(args.rows, len(rows)))
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "bc.jsonl"
        data.write_text("".join(json.dumps(row) + "\n" for row in sample))
        for grouped in (False, True):
            started = time.perf_counter()
            metrics = train_bc(
                BCConfig(
                    base_model=str(Settings().model_dir),
                    dataset_path=str(data),
                    output_dir=str(Path(tmp) / f"out-{grouped}"),
                    epochs=1,
                    batch_size=args.batch_size,
                    seed=args.seed,
                    group_by_length=grouped,
                )
            )
            seconds = time.perf_counter() - started
            table.append((grouped, seconds, metrics))
    base = table[0][1]
    lines = [
        "# BC: random batches against batches of like length",
        "",
        f"{len(sample)} rows of {args.dataset} (seed {args.seed}), batch {args.batch_size}, one epoch, "
        f"{table[0][2]['dtype']}, {table[0][2]['backend']}; seconds include loading the model and saving the adapter.",
        "",
        "| batches | seconds | rows' tokens | tokens/s of the rows | final loss | speed-up |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for grouped, seconds, m in table:
        lines.append(
            f"| {'of like length' if grouped else 'random'} | {seconds:.1f} | {m['train_tokens']:,} | "
            f"{m['tokens_per_s']:.1f} | {m['final_loss']:.3f} | {base / seconds:.2f}x |"
        )
    report("\n".join([*lines, "", machine()]), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
