"""Online CTR training on a drifting click stream, fed by a producer process.

    python examples/online_ctr.py --max-steps 2000          # stops after 2000 steps
    python examples/online_ctr.py --max-steps 0              # runs until Ctrl-C

Then: ``tensorboard --logdir online-ctr-runs`` for the windowed AUC / log loss curves and
``trainledger lineage online-ctr-runs`` for the lineage. The logic lives in
``trainledger.demos.online_ctr`` (also behind ``trainledger demo --online``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from trainledger.demos.online_ctr import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("online-ctr-runs"),
        help="directory for the run, its checkpoints and the stream files",
    )
    parser.add_argument(
        "--max-steps",
        type=int,
        default=2000,
        help="stop after this many steps (0: run until Ctrl-C or --max-seconds)",
    )
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="stop after this many seconds"
    )
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument(
        "--checkpoint-seconds", type=float, default=10.0, help="save a checkpoint every N seconds"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    result = run(
        args.out,
        max_steps=args.max_steps or 0,
        max_seconds=args.max_seconds,
        batch_size=args.batch_size,
        checkpoint_seconds=args.checkpoint_seconds,
        seed=args.seed,
    )
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
