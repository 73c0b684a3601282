"""A run's metric JSON text is stored as its lineage file holds it where it decodes to exactly
the record's metric (``parse_worker.parse_run``): what the index answers is what encoding the
record afresh would give, whatever the text holds, and the text is reused only where it can be."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from trainledger.lineage.records import EvalValues, TrainValues, eval_event, train_event
from trainledger.lineage.writer import LineageWriter
from trainledger.query.flat_record import to_record
from trainledger.query.index import LineageIndex
from trainledger.query.index_tables import prepare
from trainledger.query.parse_worker import parse_run
from trainledger.query.schema import SQLITE

WIDE = {f"m{k:04d}": (k * 7919 % 1000) / 997 for k in range(300)}

#: metric texts as a lineage file may hold them, and whether they are stored as they are
TEXTS: dict[str, tuple[str, bool]] = {
    "wide": (json.dumps(WIDE), True),  # (MindSpore's json.dumps: ", " and ": ")
    "spaced": ('\n { "acc" :0.5 ,\t"loss": 1e-3, "top": [1, {"k": 2}] }\n', True),
    "repeated": ('{"acc": 0.25, "loss": 2, "acc": 0.75}', True),
    "infinite": ('{"acc": Infinity, "loss": -Infinity}', True),
    "exact": ('{"acc": 0.1000000000000000055511151231257827, "n": 12345678901234567890}', True),
    "nan": ('{"acc": NaN, "loss": 0.5}', False),  # (the record has None, not NaN)
    "unicode": ('{"précision": 0.5}', False),  # (not ASCII: the stored text is)
    "deep": ('{"acc": 0.5, "deep": ' + "[" * 200 + "]" * 200 + "}", False),  # (left out)
    "number": ("0.5", False),  # (not an object: left out)
}


def _run(base: Path, name: str, text: str) -> Path:
    ev = eval_event(EvalValues(metrics={"placeholder": 0.0}))
    ev.evaluation_lineage.metric = text
    LineageWriter(base / name).write([train_event(TrainValues(optimizer="Adam")), ev])
    return base / name


def _stored(base: Path) -> dict[str, str]:
    with sqlite3.connect(base / ".trainledger" / "index.db") as conn:
        rows = conn.execute(
            "SELECT runs.summary_dir, r.record FROM runs JOIN records AS r ON r.run_id = runs.id"
        ).fetchall()
    return {Path(d).name: text for d, text in rows}


def _canonical(value: Any) -> str:
    """``value`` as text in which NaN equals NaN and key order counts."""
    return json.dumps(value, sort_keys=False)


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_a_run_parsed_stores_what_encoding_its_record_afresh_stores(
    tmp_path: Path, name: str
) -> None:
    from trainledger.lineage import read_lineage

    text, reused = TEXTS[name]
    run = _run(tmp_path, name, text)
    prepared = parse_run(str(run), str(run), 1.0, SQLITE)
    assert prepared is not None
    fresh = prepare(to_record(read_lineage(str(run)), str(run), 1.0), SQLITE)
    assert _canonical(json.loads(prepared.stored + "}")) == _canonical(
        json.loads(fresh.stored + "}")
    )
    assert prepared.rows == fresh.rows and prepared.run_values == fresh.run_values
    assert (f'"metric":{text}' in prepared.stored) is reused
    assert (prepared.stored == fresh.stored) is not reused


def test_the_index_answers_a_reused_text_as_read(tmp_path: Path) -> None:
    for name, (text, _) in TEXTS.items():
        _run(tmp_path, name, text)
    with LineageIndex(tmp_path) as index:
        answer = index.query({"sorted_name": "summary_dir"})
        wide = index.query({"metric/m0042": {"eq": WIDE["m0042"]}})
    metrics = {Path(o["summary_dir"]).name: o["model_lineage"]["metric"] for o in answer["object"]}
    assert list(metrics["wide"].items()) == list(WIDE.items())
    assert metrics["repeated"] == {"acc": 0.75, "loss": 2}
    assert metrics["infinite"] == {"acc": math.inf, "loss": -math.inf}
    assert metrics["exact"] == {"acc": 0.1, "n": 12345678901234567890}
    assert metrics["nan"] == {"acc": None, "loss": 0.5}
    assert metrics["unicode"] == {"précision": 0.5}
    assert metrics["deep"] == {"acc": 0.5}
    assert [Path(o["summary_dir"]).name for o in wide["object"]] == ["wide"]
    stored = _stored(tmp_path)
    assert TEXTS["wide"][0] in stored["wide"] and TEXTS["nan"][0] not in stored["nan"]
