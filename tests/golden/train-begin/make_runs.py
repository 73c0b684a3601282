"""Write the runs of this fixture with trainledger (run once, from the repository root)::

    PYTHONPATH=src .venv/bin/python tests/golden/train-begin/make_runs.py

``runs/finished``: ``Model.fit`` of 2 epochs with ``TrainLineage`` and ``EvalLineage``: its
lineage file holds the ``train_begin`` event (what was known at train begin) and, after it,
the final ``train_lineage``. ``runs/running``: a training whose process ended at step 3 of
5 without any end hook (``os._exit``, as SIGKILL leaves it): its file holds ``train_begin``
and no ``train_lineage``. MindInsight's answers for them are in ``mindinsight.json``
(``record_mindinsight.py``). Not a test module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = """
import os, sys
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from trainledger.callbacks import EvalLineage, TrainLineage
from trainledger.run import Callback, Model

class Vanish(Callback):  # the process ends with no end hook, as SIGKILL leaves it
    def on_train_step_end(self, run_context):
        if run_context.original_args().cur_step_num == 3:
            os._exit(0)

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
data = TensorDataset(torch.randn(40, 4), torch.randint(0, 2, (40,)))
train, valid = DataLoader(data, batch_size=8), DataLoader(data, batch_size=20)
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
model = Model(net, nn.CrossEntropyLoss(), opt, metrics={"accuracy"})
run, running = sys.argv[1], sys.argv[2] == "running"
callbacks = [TrainLineage(run, user_defined_info={"trial": 1}), EvalLineage(run)]
model.fit(2, train, valid, callbacks=[*callbacks, Vanish()] if running else callbacks)
"""


def main() -> None:
    runs = HERE / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    # (the command line blurred: it names where this ran)
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE.parents[2] / "src"),
        "TRAINLEDGER_REDACT": "command",
    }
    for name in ("finished", "running"):
        script = textwrap.dedent(_CHILD)
        subprocess.run([sys.executable, "-c", script, str(runs / name), name], env=env, check=True)


if __name__ == "__main__":
    main()
