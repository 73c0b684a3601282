"""Write the format-1 sample checkpoints with the code of the original version (commit ad318c0).

Run from the repository root with that version first on the path:

    PYTHONPATH=/work/wt/baseline/src .venv/bin/python tests/checkpoint/golden_v1/make_samples.py

The values are closed-form (no RNG), so ``expected_state()`` gives them back in the test.
"""

from __future__ import annotations

from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
KEY = bytes(range(16))  # the test key of the encrypted sample (a fixture, not a secret)


def expected_state() -> dict[str, torch.Tensor]:
    """The tensors every sample holds."""
    return {
        "fc.weight": (torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5.5) / 7,
        "fc.bias": torch.tensor([0.25, -1.5, 3.0], dtype=torch.float32),
        "emb.weight": (torch.arange(10, dtype=torch.float64).reshape(5, 2) / 3).to(torch.bfloat16),
        "steps": torch.tensor([1, 2, 3, 2**40], dtype=torch.int64),
        "mask": torch.tensor([True, False, True]),
        "half": torch.linspace(-2, 2, 6).to(torch.float16),
        "scalar": torch.tensor(3.5),
    }


def main() -> None:
    import trainledger
    from trainledger.checkpoint import save_checkpoint

    print("writing with", trainledger.__file__)
    state = expected_state()
    append = {"epoch_num": 3, "lr": 0.125, "tag": "v1"}
    save_checkpoint(state, HERE / "plain.ckpt", append_dict=append, info={"epoch": 3, "step": 30})
    save_checkpoint(state, HERE / "encrypted.ckpt", append_dict=append, enc_key=KEY)
    net = torch.nn.Linear(4, 3)
    with torch.no_grad():
        net.weight.copy_(state["fc.weight"])
        net.bias.copy_(state["fc.bias"])
    opt = torch.optim.SGD(net.parameters(), lr=0.5, momentum=0.9)
    net(torch.ones(2, 4)).sum().backward()
    opt.step()  # momentum buffers: (ones-derived) closed-form gradients, deterministic
    save_checkpoint(net, HERE / "with_optimizer.ckpt", optimizer=opt, info={"epoch": 1})


if __name__ == "__main__":
    main()
