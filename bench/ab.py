"""Paired A/B of one bench script between two source trees (e.g. a branch against main).

Why: a refactor must show no regression on every benchmark, and this machine is shared and
noisy, so the two versions run in alternating rounds (A, B, B, A, A, B, ...) and each figure
the script prints is compared as a median over rounds, with its spread.

Each side runs its own copy of the script (``<root>/bench/...``) against its own
``<root>/src``, since a script may import names that moved between the versions.

Every line the script prints is read as a template (its numbers replaced by ``#``) and the
numbers in it; lines with the same template are matched across rounds, and each number is
reported as ``median A | median B | B/A`` with the min-max range of each side.

    .venv/bin/python bench/ab.py --a /path/to/old/checkout --b . --rounds 4 -- \
        bench/train_overhead.py --steps 250 --rounds 10
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

_NUMBER = re.compile(r"[-+]?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?")


def _figures(output: str) -> dict[tuple[str, int], float]:
    """``(line template, position) -> number`` for every number printed."""
    out: dict[tuple[str, int], float] = {}
    seen: dict[str, int] = defaultdict(int)
    for line in output.splitlines():
        numbers = _NUMBER.findall(line)
        if not numbers:
            continue
        template = " ".join(_NUMBER.sub("#", line).split())
        seen[template] += 1
        key = f"{template} [{seen[template]}]" if seen[template] > 1 else template
        for i, text in enumerate(numbers):
            try:
                out[(key, i)] = float(text.replace(",", ""))
            except ValueError:
                continue
    return out


def _run(root: str, command: list[str]) -> str:
    root = os.path.abspath(root)
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "src"))
    done = subprocess.run(
        [sys.executable, *command], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", required=True, help="checkout A (its src/ and bench/ are used)")
    parser.add_argument("--b", required=True, help="checkout B")
    parser.add_argument("--rounds", type=int, default=4, help="runs of each side")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- script and its arguments")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    runs: dict[str, list[dict[tuple[str, int], float]]] = {"A": [], "B": []}
    for r in range(args.rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for side in order:
            runs[side].append(_figures(_run(args.a if side == "A" else args.b, command)))
    keys = [k for k in runs["A"][0] if all(k in f for f in runs["A"] + runs["B"])]
    print(
        f"A = {args.a}\nB = {args.b}\n{args.rounds} alternating runs each of: {' '.join(command)}"
    )
    print(f"{'median A':>12} {'median B':>12} {'B/A':>7}  {'range A':>23} {'range B':>23}  figure")
    for key in keys:
        a = [f[key] for f in runs["A"]]
        b = [f[key] for f in runs["B"]]
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = f"{mb / ma:7.3f}" if ma else "    n/a"
        print(
            f"{ma:12.4g} {mb:12.4g} {ratio}  {min(a):11.4g}-{max(a):<11.4g} "
            f"{min(b):11.4g}-{max(b):<11.4g}  {key[0]} #{key[1] + 1}"
        )


if __name__ == "__main__":
    main()
