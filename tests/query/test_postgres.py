"""The index in a real PostgreSQL server: choosing it, sharing it, restarts, migrations.

The server is ``tests/pg_server.py``'s (initdb + pg_ctl on 127.0.0.1); the agreement of SQL
with the Python semantics on both backends is in ``test_sql_agreement.py``.
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.pg_server import PgServer
from tests.runs import write_run
from trainledger.cli.main import cli
from trainledger.errors import LineageParamValueError, LineageQuerySummaryDataError
from trainledger.query import LineageIndex, filter_summary_lineage
from trainledger.query.postgres import schema_name

N_PROCESSES = 4
RUNS_EACH = 15


def _with_password(url: str, password: str = "s3cret-pw") -> str:
    """The server trusts 127.0.0.1, so any password works: it must never be shown."""
    return url.replace("postgres@", f"postgres:{password}@", 1)


def _schema_tables(url: str) -> dict[str, set[str]]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema LIKE 'tl\\_%'"
        ).fetchall()
    out: dict[str, set[str]] = {}
    for schema, table in rows:
        out.setdefault(schema, set()).add(table)
    return out


def test_the_api_cli_and_environment_choose_postgresql(
    golden_base: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cond = {"sorted_name": "metric/accuracy", "sorted_type": "descending", "limit": 3}
    on_sqlite = filter_summary_lineage(golden_base, cond)
    assert filter_summary_lineage(golden_base, cond, index=pg_url) == on_sqlite
    assert len(_schema_tables(pg_url)) == 1  # one schema: this base's

    monkeypatch.setenv("TRAINLEDGER_INDEX_URL", pg_url)
    other = golden_base.parent / "other"
    write_run(other, "r0", optimizer="Adam")
    assert filter_summary_lineage(other)["count"] == 1
    assert len(_schema_tables(pg_url)) == 2  # the environment chose PostgreSQL too

    result = CliRunner().invoke(
        cli, ["lineage", str(golden_base), "-f", "json", "--index", pg_url, "--sort=-loss"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["count"] == 4
    result = CliRunner().invoke(cli, ["lineage", str(other), "-f", "json", "--index", "sqlite://"])
    assert result.exit_code == 0, result.output
    assert (other / ".trainledger" / "index.db").exists()  # sqlite:// overrides the variable


def test_an_unsupported_index_url_names_what_is_expected(tmp_path: Path) -> None:
    write_run(tmp_path, "r0")
    with pytest.raises(LineageParamValueError) as err:
        filter_summary_lineage(tmp_path, index="mysql://me:hunter2@db/lineage")
    message = str(err.value)
    assert "postgresql://" in message and "'mysql'" in message and "mysql://me:***@db" in message
    assert "hunter2" not in message
    for command in ("lineage", "importance", "ui"):
        args = [command, str(tmp_path), "--index", "mysql://me:pw2@db/x"]
        result = CliRunner().invoke(cli, args + (["-m", "acc"] if command == "importance" else []))
        assert result.exit_code == 2, (command, result.output)
        assert "postgresql://" in result.output and "pw2" not in result.output


def test_an_unreachable_server_fails_at_once_without_the_password(tmp_path: Path) -> None:
    write_run(tmp_path, "r0")
    url = "postgresql://me:hunter2@127.0.0.1:1/lineage"
    start = time.monotonic()
    with pytest.raises(LineageQuerySummaryDataError) as err:
        LineageIndex(tmp_path, index=url).query()
    assert time.monotonic() - start < 15
    assert "hunter2" not in str(err.value) and "me:***@127.0.0.1:1" in str(err.value)


def _worker(base: str, url: str, wid: int, errors: Any) -> None:
    """Write runs, index them, annotate them (and one run all workers share), query."""
    try:
        from trainledger.query import LineageIndex

        with LineageIndex(base, index=url) as index:
            for i in range(RUNS_EACH):
                write_run(base, f"w{wid}_r{i:02d}", batch_size=i, metrics={"acc": i / 100})
                index.refresh()
                index.set_annotation(f"./w{wid}_r{i:02d}", tag=wid, remark=f"w{wid} {i}")
                # every worker sets another field of the same run: none may overwrite another
                if wid % 2:
                    index.set_annotation("./shared", tag=wid)
                else:
                    index.set_annotation("./shared", remark=f"from w{wid}")
                result = index.query({"sorted_name": "metric/acc", "limit": 5})
                assert result["count"] >= i + 1
    except BaseException:
        errors.put(traceback.format_exc())


def _querier(base: str, url: str, stop: Any, errors: Any) -> None:
    try:
        from trainledger.query import LineageIndex

        with LineageIndex(base, index=url) as index:
            seen = 0
            for _ in range(2000):  # bounded
                if stop.is_set():
                    break
                count = index.query({"metric/acc": {"ge": 0}}, refresh=False)["count"]
                assert count >= seen  # runs are only added: a count never goes back
                seen = count
    except BaseException:
        errors.put(traceback.format_exc())


@pytest.mark.slow
def test_many_writer_processes_lose_nothing(tmp_path: Path, pg_url: str) -> None:
    base = str(tmp_path)
    write_run(base, "shared")
    ctx = mp.get_context("spawn")
    errors = ctx.Queue()
    stop = ctx.Event()
    workers = [
        ctx.Process(target=_worker, args=(base, pg_url, w, errors)) for w in range(N_PROCESSES)
    ]
    querier = ctx.Process(target=_querier, args=(base, pg_url, stop, errors))
    for p in [querier, *workers]:
        p.start()
    for p in workers:
        p.join(180)
    stop.set()
    querier.join(60)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert not found, found[0]
    assert all(p.exitcode == 0 for p in [*workers, querier])

    with LineageIndex(base, index=pg_url) as index:
        assert index.query()["count"] == N_PROCESSES * RUNS_EACH + 1
        notes = index.get_annotations()
        for w in range(N_PROCESSES):
            for i in range(RUNS_EACH):
                assert notes[f"./w{w}_r{i:02d}"] == {"tag": w, "remark": f"w{w} {i}"}
        assert set(notes["./shared"]) == {"tag", "remark"}
        by_tag = index.query({"sorted_name": "tag", "sorted_type": "descending", "limit": 1})
        assert by_tag["object"][0]["added_info"]["tag"] == N_PROCESSES - 1


def test_a_restart_loses_nothing_committed_and_queries_reconnect(
    tmp_path: Path, pg_server: PgServer, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = _with_password(pg_url)
    for i in range(6):
        write_run(tmp_path, f"r{i}", learning_rate=0.01 * (i + 1), metrics={"acc": i / 10})
    cond = {"learning_rate": {"gt": 0.02}, "sorted_name": "metric/acc", "sorted_type": "descending"}
    caplog.set_level(logging.DEBUG)
    with LineageIndex(tmp_path, index=url) as index:
        before = index.query(cond)
        index.set_annotation("./r3", tag=7, remark="before the restart")
        stop = threading.Event()
        failures: list[BaseException] = []
        answers: list[int] = []

        def keep_querying() -> None:  # another index object, querying through the restart
            with LineageIndex(tmp_path, index=url) as other:
                while not stop.is_set():
                    try:
                        answers.append(other.query(cond, refresh=False)["count"])
                    except BaseException as exc:  # noqa: BLE001 - reported below
                        failures.append(exc)
                        return

        thread = threading.Thread(target=keep_querying)
        thread.start()
        time.sleep(0.3)
        pg_server.restart()
        time.sleep(0.3)
        stop.set()
        thread.join(90)
        assert not failures, failures[0]
        assert answers and set(answers) == {before["count"]}
        after = index.query(cond)  # this connection died in the restart: it reconnects
        assert after["object"] == [
            {**o, "added_info": {"tag": 7, "remark": "before the restart"}}
            if o["summary_dir"] == "./r3"
            else o
            for o in before["object"]
        ]
        assert index.set_annotation("./r4", tag=1) == {"tag": 1}
    assert "s3cret-pw" not in caplog.text
    assert "reconnecting" in caplog.text  # the restart was seen, and handled


def _refuse(run_dir: str) -> dict[str, Any]:
    raise AssertionError(f"re-parsed {run_dir}: the migrated index was not used")


def test_an_older_schema_is_migrated_keeping_runs_and_annotations(
    tmp_path: Path, pg_url: str
) -> None:
    from tests.query.old_layouts import to_schema_6
    from trainledger.query import schema

    for i in range(3):
        write_run(tmp_path, f"r{i}", optimizer="Adam", metrics={"acc": i / 10})
    cond = {"metric/acc": {"gt": 0.05}, "sorted_name": "metric/acc"}
    with LineageIndex(tmp_path, index=pg_url) as index:
        index.set_annotation("./r1", tag=4, remark="kept")
        answer = index.query(cond)
        index.db.write(lambda c: to_schema_6(c, schema.POSTGRES), bump=True)
        assert index.db.read(lambda c: schema.read_meta(c, "schema_version")) == 6
    with LineageIndex(tmp_path, index=pg_url, reader=_refuse) as index:  # current code
        assert index.refresh().parsed == 0
        assert index.query(cond) == answer
        assert index.get_annotations() == {"./r1": {"tag": 4, "remark": "kept"}}
        meta = index.db.read(
            lambda c: [schema.read_meta(c, k) for k in ("schema_version", "compatible_from")]
        )
        assert meta == [schema.SCHEMA_VERSION, 8]  # code before version 8 cannot read it
        indexes = index.db.read(
            lambda c: [r[0] for r in c.execute("SELECT indexname FROM pg_indexes").fetchall()]
        )
        assert {"custom_by_value", "custom_by_text", "runs_default_order"} <= set(indexes)
    write_run(tmp_path, "r3", optimizer="Adam", metrics={"acc": 0.9})
    with LineageIndex(tmp_path, index=pg_url) as index:  # new runs' ids continue
        newest = index.query({**cond, "sorted_type": "descending"})["object"][0]
        assert newest["summary_dir"] == "./r3"


def test_an_index_from_a_newer_release_is_refused_not_dropped(tmp_path: Path, pg_url: str) -> None:
    from trainledger.query import schema

    write_run(tmp_path, "r0")
    with LineageIndex(tmp_path, index=pg_url) as index:
        index.set_annotation("./r0", tag=2)
        newer = schema.SCHEMA_VERSION + 1

        def set_version(conn: Any, compatible_from: int) -> None:
            schema.set_meta(conn, "schema_version", newer)
            schema.set_meta(conn, "compatible_from", compatible_from)

        index.db.write(lambda c: set_version(c, schema.SCHEMA_VERSION), bump=False)
    with LineageIndex(tmp_path, index=pg_url) as index:  # a compatible newer one: used
        assert index.query()["object"][0]["added_info"] == {"tag": 2}
        index.db.write(lambda c: set_version(c, newer), bump=False)
    with pytest.raises(LineageQuerySummaryDataError, match="upgrade trainledger"):
        LineageIndex(tmp_path, index=pg_url).query()
    import psycopg

    with psycopg.connect(pg_url) as conn:  # nothing was dropped meanwhile
        name = schema_name(str(tmp_path.resolve()))
        assert conn.execute(f'SELECT run_id, tag FROM "{name}".annotations').fetchall() == [
            ("./r0", 2)
        ]


def test_annotations_survive_a_rebuild_of_the_derived_rows(tmp_path: Path, pg_url: str) -> None:
    from trainledger.query import schema

    for i in range(3):
        write_run(tmp_path, f"r{i}")
    with LineageIndex(tmp_path, index=pg_url) as index:
        index.refresh()
        index.set_annotation("./r2", remark="keep me")

        def forget_runs(conn: Any) -> None:  # an index of version 4: no runs table of ours
            conn.execute("DROP TABLE runs")
            schema.set_meta(conn, "schema_version", 4)

        index.db.write(forget_runs)
    with LineageIndex(tmp_path, index=pg_url) as index:  # migrated again: runs re-parsed
        assert index.refresh().parsed == 3
        obj = index.query({"summary_dir": {"eq": "./r2"}})["object"][0]
        assert obj["added_info"] == {"remark": "keep me"}


def test_a_new_shared_index_starts_with_the_sqlite_annotations(tmp_path: Path, pg_url: str) -> None:
    write_run(tmp_path, "r0")
    write_run(tmp_path, "r1")
    with LineageIndex(tmp_path) as index:  # the SQLite era
        index.set_annotation("./r0", tag=9, remark="from SQLite")
    with LineageIndex(tmp_path, index=pg_url) as index:
        assert index.get_annotations() == {"./r0": {"tag": 9, "remark": "from SQLite"}}
        index.set_annotation("./r1", tag=1)
    with LineageIndex(tmp_path) as index:  # the file is left as it was
        index.set_annotation("./r0", tag=None)
    with LineageIndex(tmp_path, index=pg_url) as index:  # seeded once, not again
        assert index.get_annotations() == {
            "./r0": {"tag": 9, "remark": "from SQLite"},
            "./r1": {"tag": 1},
        }


def test_numbers_of_any_size_answer_alike_on_both_backends(tmp_path: Path, pg_url: str) -> None:
    from trainledger.query.conditions import validate_condition
    from trainledger.query.semantics import evaluate

    big = 2**64 + 1
    for name, count in [("plain", 7), ("uint64", big), ("huge", 10**400), ("neg", -(2**70))]:
        write_run(tmp_path, name, metrics={"acc": 0.5, "count": count}, learning_rate=0.1)
    write_run(tmp_path, "edge", metrics={"count": 2**53 + 1})
    write_run(tmp_path, "edge_f", metrics={"count": float(2**53)})
    conds: list[dict[str, Any]] = [
        {"metric/count": {op: v}}
        for v in (2**63, 2**64, 10**300, 0, 7, 2**53, 2**53 + 1, float(2**53), -(2**70))
        for op in ("eq", "lt", "gt", "le", "ge")
    ]
    conds += [
        {"metric/count": {"in": [big, 7, 2**53 + 1]}},
        {"metric/count": {"not_in": [2**53, None]}},
        {"sorted_name": "metric/count", "sorted_type": "ascending"},
        {"sorted_name": "metric/count", "sorted_type": "descending"},
    ]
    with LineageIndex(tmp_path) as lite, LineageIndex(tmp_path, index=pg_url) as pg:
        stored = lite.records(refresh=True)
        for cond in conds:
            expected = evaluate(stored, validate_condition(cond))
            assert lite.query(cond) == expected, cond
            assert pg.query(cond) == expected, cond


def test_a_driver_message_never_carries_the_password(tmp_path: Path) -> None:
    """Whatever the driver says about a bad URL, the password is not in our message."""
    write_run(tmp_path, "r0")
    for url in (
        "postgresql://me:hunter2@127.0.0.1:notaport/db",
        "postgresql://me@127.0.0.1:1/db?password=hunter2&sslmode=bogus",
    ):
        with pytest.raises(LineageQuerySummaryDataError) as err:
            LineageIndex(tmp_path, index=url).query()
        assert "hunter2" not in str(err.value), str(err.value)


def _query_in_child(index: LineageIndex, out: Any) -> None:
    out.put(index.query({"limit": 1}, refresh=False)["count"])


def test_a_forked_child_opens_its_own_session(tmp_path: Path, pg_url: str) -> None:
    """A child inherits the parent's index object: it must not use (or close) the parent's
    connection; both go on answering."""
    for i in range(3):
        write_run(tmp_path, f"r{i}")
    with LineageIndex(tmp_path, index=pg_url) as index:
        assert index.query()["count"] == 3
        ctx = mp.get_context("fork")
        out = ctx.Queue()
        child = ctx.Process(target=_query_in_child, args=(index, out))
        child.start()
        child.join(60)
        assert child.exitcode == 0 and out.get(timeout=10) == 3
        assert index.query({"limit": 1}, refresh=False)["count"] == 3


def test_a_changed_run_is_found_by_its_new_custom_values(tmp_path: Path, pg_url: str) -> None:
    """The JSONB copy of a run's custom values is replaced with the run's row when the run
    changes: filters read the new values only, and a run without the label as None."""
    write_run(tmp_path, "r0", user={"team": "a"}, metrics={"acc": 0.1})
    write_run(tmp_path, "r1", user={"team": "b"}, metrics={"acc": 0.2})
    write_run(tmp_path, "r2", user={"trial": 1})  # no team: its value is None

    def dirs(cond: dict[str, Any]) -> list[str]:
        return sorted(o["summary_dir"] for o in index.query(cond)["object"])

    with LineageIndex(tmp_path, index=pg_url) as index:
        assert dirs({"user_defined/team": {"eq": "a"}}) == ["./r0"]
        assert dirs({"user_defined/team": {"in": [None]}}) == ["./r2"]
        write_run(tmp_path, "r0", user={"team": "c"}, metrics={"acc": 0.9}, ts=1_800_000_100)
        assert dirs({"user_defined/team": {"eq": "a"}}) == []
        assert dirs({"user_defined/team": {"eq": "c"}, "metric/acc": {"gt": 0.5}}) == ["./r0"]
        assert dirs({"user_defined/team": {"not_in": ["b", "c"]}}) == ["./r2"]
        assert dirs({"metric/acc": {"lt": 0.5}}) == ["./r1"]
