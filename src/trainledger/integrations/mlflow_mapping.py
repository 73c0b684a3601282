"""How one MLflow run maps onto trainledger's lineage (pure functions, no MLflow import).

=====================================  ===================================================
MLflow                                 trainledger lineage
=====================================  ===================================================
every param                            ``user_defined/<name>``; a value that parses as a
                                       finite number becomes that number (int if integral
                                       and within int32, else float), so range filters work
param ``learning_rate``/``lr``         ``hyper_parameters.learning_rate`` (float)
param ``optimizer``/``optimizer_name`` ``hyper_parameters.optimizer``
param ``epochs``/``num_epochs``/       ``hyper_parameters.epoch`` (int)
``num_train_epochs``/``max_epochs``
param ``batch_size``/``train_batch_size``/ ``hyper_parameters.batch_size`` (int)
``per_device_train_batch_size``
param ``loss_function``/``loss_fn``/   ``hyper_parameters.loss_function``
``loss``/``criterion``
param ``network``/``model``/           ``algorithm.network``
``model_name``/``architecture``/``arch``
param ``train_dataset_path``/          ``train_dataset.train_dataset_path``; ``*_size`` ->
``dataset_path``/``data_path``         ``train_dataset_size``; ``valid_dataset_path``/
                                       ``valid_dataset_size`` likewise
every metric's last value              ``metric/<key>`` (its whole history: TensorBoard
                                       scalars ``<key>`` at MLflow's steps and times)
params of ``mlflow.pytorch.autolog``  ``optimizer/<name>`` (``optimizer_settings``, the rules of
(``optimizer_name`` and the torch      ``lineage.analyzers.settings``): ``betas`` "(0.9,
optimizer's ``defaults``)              0.999)" -> ``betas.0``/``betas.1``, flags "True" ->
                                       "true", "None" and ``foreach``/``fused``/... left out
params ``adam_beta1``/``adam_beta2``/  ``optimizer/betas.0``/``betas.1``/``eps``/
``adam_epsilon``/``weight_decay``      ``weight_decay`` and ``optimizer/lr`` from
(Transformers' ``MLflowCallback``,     ``learning_rate`` (Transformers' AdamW)
an ``optim`` of ``adamw_*``)
metric ``loss``/``train_loss``         also ``algorithm.loss`` (last value)
tag ``mlflow.runName``                 ``user_defined/mlflow.run_name``
tag ``mlflow.user``                    ``user_defined/mlflow.user``
tag ``mlflow.source.git.commit``       ``run.git_commit``
tag ``mlflow.source.name``             ``run.command``
other ``mlflow.*`` tags                left out (MLflow's own bookkeeping)
every other tag                        ``user_defined/tag.<key>`` (numbers parsed too)
run id, experiment name                ``user_defined/mlflow.run_id``,
                                       ``user_defined/mlflow.experiment``
status FINISHED/FAILED/KILLED/RUNNING  ``run.status`` finished/failed/stopped/running
start/end time (ms)                    ``run.start_time``/``end_time``/``duration`` (s)
artifacts ``*.ckpt``, ``*.pt``,        ``run.checkpoints`` (path, size); the one named
``*.pth``, ``*.safetensors``, ``*.bin``  ``best`` (else the last in name order) is
``*.h5``, ``*.keras``, ``*.onnx``      ``model`` ``{"ckpt": path}``, ``size``
=====================================  ===================================================
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CHECKPOINT_SUFFIXES",
    "PARAM_FIELDS",
    "checkpoint_choice",
    "optimizer_settings_of",
    "parse_number",
    "run_status_of",
    "tag_fields",
    "train_fields",
]

_INT32_MAX = 2**31 - 1
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")

#: lineage field -> the MLflow param names that give it (first present wins)
PARAM_FIELDS: dict[str, tuple[str, ...]] = {
    "learning_rate": ("learning_rate", "lr"),
    "optimizer": ("optimizer", "optimizer_name"),
    "epoch": ("epochs", "num_epochs", "num_train_epochs", "max_epochs", "epoch"),
    "batch_size": ("batch_size", "train_batch_size", "per_device_train_batch_size"),
    "loss_function": ("loss_function", "loss_fn", "loss", "criterion"),
    "network": ("network", "model", "model_name", "architecture", "arch"),
    "train_dataset_path": ("train_dataset_path", "dataset_path", "data_path", "dataset"),
    "train_dataset_size": ("train_dataset_size", "train_size", "dataset_size"),
    "valid_dataset_path": ("valid_dataset_path", "eval_dataset_path", "val_dataset_path"),
    "valid_dataset_size": ("valid_dataset_size", "eval_size", "val_size"),
}
_FLOAT_FIELDS = {"learning_rate"}
_INT_FIELDS = {"epoch", "batch_size", "train_dataset_size", "valid_dataset_size"}
_LOSS_METRICS = ("loss", "train_loss")
_STATUS = {"FINISHED": "finished", "FAILED": "failed", "KILLED": "stopped"}
CHECKPOINT_SUFFIXES = (".ckpt", ".pt", ".pth", ".safetensors", ".bin", ".h5", ".keras", ".onnx")


def parse_number(text: str) -> int | float | str:
    """MLflow params are strings: ``"32"`` -> 32, ``"1e-3"`` -> 0.001, others unchanged.

    Only plain decimal notation parses (not "nan", "inf", "0x10", "1_000"); ints beyond
    int32 (lineage's user field) become floats.
    """
    stripped = text.strip()
    if not _NUMBER.match(stripped):
        return text
    if re.fullmatch(r"[+-]?\d+", stripped):
        value = int(stripped)
        return value if abs(value) <= _INT32_MAX else float(value)
    number = float(stripped)
    return number if math.isfinite(number) else text


def _typed(field: str, value: int | float | str) -> Any:
    if field in _FLOAT_FIELDS:
        return float(value) if isinstance(value, (int, float)) else None
    if field in _INT_FIELDS:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) else None
    return str(value)


def train_fields(params: Mapping[str, str], last_metrics: Mapping[str, float]) -> dict[str, Any]:
    """The TrainValues/EvalValues fields the params (and the final loss) give."""
    out: dict[str, Any] = {}
    for field, names in PARAM_FIELDS.items():
        for name in names:
            if name in params:
                value = _typed(field, parse_number(params[name]))
                if value is not None:
                    out[field] = value
                break
    for name in _LOSS_METRICS:
        if name in last_metrics and math.isfinite(last_metrics[name]):
            out["loss"] = float(last_metrics[name])
            break
    return out


#: the constructor arguments of torch.optim's optimizers (what ``optimizer.defaults`` holds),
#: which ``mlflow.pytorch.autolog`` logs as params beside ``optimizer_name``
TORCH_OPTIMIZER_ARGS = frozenset(
    {"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "betas", "eps",
     "amsgrad", "alpha", "centered", "lr_decay", "initial_accumulator_value", "rho", "lambd",
     "t0", "etas", "step_sizes", "momentum_decay", "decoupled_weight_decay", "max_iter",
     "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn"}
)  # fmt: skip
#: Transformers' TrainingArguments -> the settings of the AdamW it builds from them
_TRANSFORMERS_ADAMW = {
    "learning_rate": "lr",
    "adam_beta1": "betas.0",
    "adam_beta2": "betas.1",
    "adam_epsilon": "eps",
    "weight_decay": "weight_decay",
}
_TUPLE = re.compile(r"^\((.*)\)$|^\[(.*)\]$")


def _setting(text: str) -> list[tuple[str, int | float | str]] | None:
    """A param's text as settings (``lineage.analyzers.settings``' rules): ("", value), or
    (".<i>", value) per element of a tuple; None for "None" or what no rule reads."""
    stripped = text.strip()
    if stripped in ("True", "False"):
        return [("", stripped.lower())]
    if stripped in ("None", ""):
        return None
    found = _TUPLE.match(stripped)
    if found:
        items = [parse_number(item) for item in (found.group(1) or found.group(2)).split(",")]
        if not items or any(isinstance(item, str) for item in items):
            return None
        return [(f".{i}", item) for i, item in enumerate(items)]
    return [("", parse_number(stripped))]


def optimizer_settings_of(params: Mapping[str, str]) -> dict[str, int | float | str]:
    """``optimizer/<name>`` settings from an MLflow run's params: those that
    ``mlflow.pytorch.autolog`` (``optimizer_name`` with the optimizer's defaults) or
    Transformers' ``MLflowCallback`` (``optim`` ``adamw_*`` with its ``adam_*`` arguments)
    logged; ``{}`` for a run logged any other way (its params stay ``user_defined/``)."""
    names: dict[str, str] = {}
    if "optimizer_name" in params:
        names = {name: name for name in params if name in TORCH_OPTIMIZER_ARGS}
    elif str(params.get("optim", "")).startswith("adamw"):
        names = {param: name for param, name in _TRANSFORMERS_ADAMW.items() if param in params}
    out: dict[str, int | float | str] = {}
    for param, name in sorted(names.items()):
        for suffix, value in _setting(params[param]) or ():
            out[name + suffix] = value
    return out


def tag_fields(tags: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(user_defined, run)`` fields from the run's tags (see the table)."""
    user: dict[str, Any] = {}
    run: dict[str, Any] = {}
    for key, value in tags.items():
        if key == "mlflow.runName":
            user["mlflow.run_name"] = value
        elif key == "mlflow.user":
            user["mlflow.user"] = value
        elif key == "mlflow.source.git.commit":
            run["git_commit"] = value
        elif key == "mlflow.source.name":
            run["command"] = (value,)
        elif not key.startswith("mlflow."):
            user[f"tag.{key}"] = parse_number(value)
    return user, run


def run_status_of(mlflow_status: str) -> str:
    """MLflow's run status -> trainledger's (SCHEDULED and RUNNING are "running")."""
    return _STATUS.get(mlflow_status, "running")


def checkpoint_choice(paths: Sequence[str]) -> str | None:
    """The model of the run among its checkpoint artifacts: one named "best", else the last
    in natural name order (``epoch=10`` after ``epoch=9``)."""
    if not paths:
        return None
    best = [p for p in paths if "best" in p.rsplit("/", 1)[-1].lower()]
    if best:
        return best[-1]

    def natural(path: str) -> list[Any]:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]

    return sorted(paths, key=natural)[-1]
