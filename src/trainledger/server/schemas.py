"""Request and response bodies of the JSON API (they are what the OpenAPI schema documents).

Lineage objects stay free-form dicts: their keys are MindInsight's and the user's own metric
and user_defined names, which a fixed model could not list. Everything the server itself
defines (annotations, scalar requests, checkpoints) is typed and validated here, so a bad
body is a 422 naming the field before any handler runs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_TAG = 10
MAX_REMARK = 1000
MAX_SERIES_RUNS = 50
MAX_SERIES_TAGS = 50
MAX_POINTS = 5000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ColumnInfo(BaseModel):
    label: str
    required: bool = False
    type: str = "str"


class SearchResult(BaseModel):
    """``filter_summary_lineage``'s answer; each object also carries ``run_id``."""

    customized: dict[str, ColumnInfo]
    object: list[dict[str, Any]]
    count: int
    warnings: list[str] = Field(
        default_factory=list,
        description="Notes on the condition: each field it names that no run has, with the "
        "nearest the runs have (the answer is then empty or unordered).",
    )


class Status(BaseModel):
    version: str
    base: str = Field(description="Name of the base directory (not its full path).")
    count: int = Field(description="Number of runs under the base.")
    stamp: str = Field(description="Changes whenever runs appear or change; poll it.")
    token_required: bool
    role: str = Field(description="What this request's token may do: 'read' or 'write'.")
    unsynced: list[str] = Field(
        default_factory=list,
        description="For an s3:// base: locations under it that a process on this machine "
        "wrote and never finished uploading (`trainledger sync` uploads them).",
    )


class ColumnsResult(BaseModel):
    """Every column of the current result, grouped as the column chooser shows them."""

    groups: dict[str, list[str]]
    sortable: list[str]


class PointsRequest(_Strict):
    condition: dict[str, Any] = Field(default_factory=dict)
    columns: list[str] = Field(default_factory=list, max_length=200)
    where: list[str] = Field(default_factory=list, max_length=50)
    max_runs: int = Field(5000, ge=1, le=100_000)


class PointsResult(BaseModel):
    """Column-oriented values of the filtered runs, for the parallel-coordinates chart."""

    run_ids: list[str]
    columns: dict[str, list[Any]]
    count: int = Field(description="Runs matching before the max_runs cut.")


class Annotation(_Strict):
    tag: int | None = Field(None, ge=0, le=MAX_TAG, description="0 (none) .. 10")
    remark: str | None = Field(None, max_length=MAX_REMARK)


class AnnotationResult(BaseModel):
    run_id: str
    tag: int
    remark: str


class Checkpoint(BaseModel):
    name: str
    size: int
    step: int | None = Field(
        None,
        description="The global step it was saved at (the step the curves use), as the "
        "run's lineage records it; null when the lineage does not say.",
    )
    step_in_epoch: int | None = Field(
        None, description="The step within its epoch, from the file name (<prefix>-<epoch>_<step>)."
    )
    epoch: int | None = None
    time: float | None = None
    #: "checkpoint", or "landscape" for collect_landscape's weight snapshots
    kind: str = "checkpoint"


class NonFinite(BaseModel):
    """The first step of one kind of non-finite value in a series."""

    step: int
    value: Literal["nan", "inf", "-inf"]


class DivergedSeries(BaseModel):
    """A loss or metric series that went NaN or infinite (``server/divergence.py``)."""

    tag: str
    step: int = Field(description="The first step whose value is NaN or infinite.")
    value: Literal["nan", "inf", "-inf"] | None = Field(
        description="What it was (null: stored by an index of schema 12, kind unknown)."
    )


class RunDetail(BaseModel):
    run_id: str
    summary_dir: str
    status: str | None = None
    lineage: dict[str, Any]
    added_info: dict[str, Any]
    checkpoints: list[Checkpoint]
    nonfinite: list[DivergedSeries] = Field(
        default_factory=list,
        description="The run's loss and metric series that went NaN or infinite, by step "
        "(not gradient norms or loss scales, which mixed precision makes inf routinely).",
    )


class WhereRequest(_Strict):
    where: list[str] = Field(..., max_length=50)


class WhereResult(BaseModel):
    condition: dict[str, Any]


class DatasetGroup(BaseModel):
    dataset_mark: str | None = Field(description="The first of the group's dataset marks.")
    dataset_marks: list[str] = Field(description="MindInsight's marks (one per loader setup).")
    batch_sizes: list[int] = Field(description="The batch sizes the group's runs used.")
    dataset_graph: dict[str, Any]
    run_ids: list[str]


class DatasetGroups(BaseModel):
    groups: list[DatasetGroup]


class ScalarTags(BaseModel):
    runs: dict[str, list[str]]
    tags: list[str]


class SeriesRequest(_Strict):
    runs: list[str] = Field(..., min_length=1, max_length=MAX_SERIES_RUNS)
    tags: list[str] = Field(..., min_length=1, max_length=MAX_SERIES_TAGS)
    max_points: int = Field(1000, ge=4, le=MAX_POINTS)
    view: Literal["merged", "sessions"] = Field(
        "merged",
        description="merged: each step once by the series rule (a resumed run's later "
        "session wins); sessions: every point as written, to draw each session apart",
    )
    step_min: int | None = Field(
        None, description="Only points at this step or later (a zoomed chart's left edge)."
    )
    step_max: int | None = Field(
        None, description="Only points at this step or earlier (a zoomed chart's right edge)."
    )
    smoothing: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="TensorBoard's debiased exponential smoothing weight (0: none), applied to "
        "the whole series at full resolution before the range and the downsampling (each "
        "session on its own with view=sessions): a step has the same smoothed value at every "
        "zoom. The values are in `smoothed`, next to the raw points.",
    )
    continue_parent: bool = Field(
        False,
        description="Each run that started from a checkpoint of another run of the base (its "
        "largest source, `GET /runs/{id}/family`) continues its parent's line: the parent's "
        "points up to the checkpoint's step, then the run's own, drawn at that step plus "
        "their own (`parent` says where and how many); `step_min`/`step_max` are on that "
        "drawn axis. The series of such a run are read from their points, not an overview.",
    )

    @model_validator(mode="after")
    def _ordered_range(self) -> SeriesRequest:
        if self.step_min is not None and self.step_max is not None:
            if self.step_min > self.step_max:
                raise ValueError(
                    f"step_min expected <= step_max, received: step_min={self.step_min}, "
                    f"step_max={self.step_max}"
                )
        return self


class SeriesParent(BaseModel):
    """Where a continued series' run started (``continue_parent``)."""

    run_id: str = Field(description="The parent run.")
    checkpoint: str = Field(description="The checkpoint the run started from.")
    step: int = Field(description="Its global step: the run's own step s is drawn at step + s.")
    match: float = Field(description="The share (0..1) of the run's weights it explains.")
    count: int = Field(
        description="How many of the first `points` (and `sessions`, `smoothed`) are the "
        "parent's, each at its own step, at most the checkpoint's."
    )


class Series(BaseModel):
    run_id: str
    tag: str
    total: int = Field(description="Points on disk before downsampling.")
    in_range: int = Field(
        description="Points between step_min and step_max (all of them without a range), "
        "downsampled from the full data to at most max_points."
    )
    points: list[tuple[int, float, float | None]] = Field(
        description="[step, wall_time, value]; value null for NaN/inf."
    )
    sessions: list[int] = Field(
        description="The session (writer process) of each point, numbered in writing order."
    )
    nonfinite: list[NonFinite] = Field(
        default_factory=list,
        description="The first step of each kind of non-finite value in the whole series, "
        "by step, from the full data (a NaN downsampling leaves out is still here).",
    )
    smoothed: list[float | None] | None = Field(
        None,
        description="With smoothing > 0: the smoothed value of each of `points` (null where "
        "the point's value is NaN or infinite), computed over the full series; else null.",
    )
    parent: SeriesParent | None = Field(
        None,
        description="With continue_parent, for a run started from another run's checkpoint: "
        "the fork; `total`, `in_range` and `nonfinite` stay the run's own.",
    )


class SeriesResult(BaseModel):
    series: list[Series]


class ModelRegistration(_Strict):
    """A checkpoint of a run to register as the next version of a model."""

    run: str = Field(description="The run's id, as the runs table names it.")
    checkpoint: str = Field(
        description="The checkpoint as the run's checkpoint table lists it (its `name`)."
    )
    alias: str | None = Field(None, description="Also point this alias at the new version.")


class AliasTarget(_Strict):
    version: int = Field(description="The version the alias is to point at.")
