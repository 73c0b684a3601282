"""`trainledger lineage` over a TensorBoard logdir: its runs, their HParams, filters and
series sorts, with nothing converted (``query/tb_runs.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.tb_logdirs import lightning_version, torch_run
from trainledger.cli.main import cli


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_lineage_over_a_torch_logdir(tmp_path: Path) -> None:
    base = tmp_path / "runs"
    torch_run(base / "slow", {"lr": 0.001, "opt": "adam"}, {"hparam/acc": 0.5}, [3.0, 2.0])
    torch_run(base / "fast", {"lr": 0.1, "opt": "sgd"}, {"hparam/acc": 0.75}, [3.0, 0.5])
    torch_run(base / "mid", {"lr": 0.05, "opt": "sgd"}, {"hparam/acc": 0.625}, [3.0, 1.0])
    code, out = run("lineage", str(base), "--sort", "min(loss)", "-c", "min(loss)")
    assert code == 0, out
    assert out.index("fast") < out.index("mid") < out.index("slow")
    code, out = run("lineage", str(base), "--sort", "summary_dir")
    assert code == 0, out
    for shown in ("lr", "acc", "0.75", "adam", "0.001"):
        assert shown in out, out  # the HParams as default columns
    code, out = run(
        "lineage", str(base), "--where", "user_defined/lr > 0.01", "--sort", "-min(loss)",
        "-f", "json",
    )  # fmt: skip
    assert code == 0, out
    result = json.loads(out)
    assert [o["summary_dir"] for o in result["object"]] == ["./mid", "./fast"]
    assert result["object"][0]["model_lineage"]["user_defined"] == {"lr": 0.05, "opt": "sgd"}
    assert result["object"][1]["series"] == {"min(loss)": 0.5}


def test_a_tag_or_field_no_run_has_is_named_even_when_nothing_matches(tmp_path: Path) -> None:
    """A typo in --where matches no run: the error names it and the closest names the base's
    runs have (their fields, their scalar tags), inside an ``or`` and in --sort too."""
    base = tmp_path / "runs"
    torch_run(base / "a", {"lr": 0.001}, {"hparam/acc": 0.5}, [3.0, 2.0])
    torch_run(base / "b", {"lr": 0.1}, {"hparam/acc": 0.75}, [3.0, 0.5])
    code, out = run("lineage", str(base), "--where", "max(los) < 1")
    assert code == 1 and "no run has the scalar tag 'los' of 'max(los)'" in out, out
    assert "did you mean 'loss'" in out and "tags the runs have: loss" in out
    code, out = run("lineage", str(base), "--where", "user_defined/l > 0 or user_defined/lr > 0")
    assert code == 1 and "no run has the field 'user_defined/l'" in out, out
    assert "did you mean 'user_defined/lr'" in out
    code, out = run("lineage", str(base), "--sort", "min(lost)")
    assert code == 1 and "'min(lost)'" in out and "did you mean 'loss'" in out, out
    code, out = run("lineage", str(base), "--where", "max(loss) < 1", "-c", "count(loss)")
    assert code == 0 and "no run under" in out, out  # a real tag matching nothing: no error
    code, out = run("lineage", str(base), "--where", "max(loss) > 2.5", "-f", "json")
    assert code == 0 and json.loads(out)["count"] == 2, out


def test_lightning_logdir_needs_the_depth_of_its_versions(tmp_path: Path) -> None:
    save = tmp_path / "logs"
    lightning_version(save, "net", {"lr": 0.01}, hp_metric=0.25, loss=1.0)
    lightning_version(save, "net", {"lr": 0.02}, hp_metric=0.5, loss=1.0)
    code, out = run("lineage", str(save))  # version_N is depth 2
    assert code == 0 and "no runs under" in out and "--max-depth 1" in out
    code, out = run(
        "lineage", str(save), "--max-depth", "2", "-w", "metric/hp_metric >= 0.5", "-f", "csv"
    )
    assert code == 0, out
    lines = out.splitlines()
    assert len(lines) == 2 and "./net/version_1" in lines[1]
