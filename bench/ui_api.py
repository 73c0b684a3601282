"""How fast the web UI's API answers over many runs (not a test).

Generates N run directories of lineage files (default 10,000), starts the real server
(uvicorn on 127.0.0.1, as ``trainledger ui`` does) and measures over HTTP:

- time to the first page of the table after start-up, with no index yet (cold: the index is
  built from every lineage file) and with the index already on disk (warm: a restart);
- later table requests (filter / sort / page / --where), and the chart's column data;
- ``--exports K``: K clients each exporting the whole table as CSV at once while one client
  loads table pages: the exports' median and the pages' p99 (the page must not wait behind
  the exports).

Targets: first page after a warm start-up under 1 s; each later filter/sort request under
100 ms. Usage::

    .venv/bin/python bench/ui_api.py [--runs 10000] [--repeat 20] [--exports 20 --only-exports]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the dev extra's HTTP client (httpx's API)
import uvicorn

from trainledger.lineage.records import (
    EvalValues,
    RunValues,
    TrainValues,
    dataset_graph_event,
    eval_event,
    run_event,
    train_event,
    user_defined_event,
)
from trainledger.server.app import create_app

try:
    from trainledger.server.run_store import IndexedRunStore
except ImportError:  # the code before the rename, or the query-service refactor (A/B runs)
    try:
        from trainledger.server.run_store import (  # type: ignore[attr-defined,no-redef]
            EngineStore as IndexedRunStore,
        )
    except ImportError:
        from trainledger.server.store import (  # type: ignore[no-redef]
            EngineStore as IndexedRunStore,
        )
try:
    from trainledger.storage import frame
except ImportError:  # the code before the storage/ refactor (A/B runs)
    from trainledger.summary.framing import frame  # type: ignore[no-redef]

OPTIMIZERS = ("Adam", "SGD", "Momentum", "AdamW")


def generate(base: Path, n: int) -> None:
    """N runs, written directly (no fsync per file: this is test data, not a training)."""
    now = int(time.time())
    for i in range(n):
        run = base / f"run{i:05d}"
        run.mkdir(parents=True)
        batch = (16, 32, 64, 128)[i % 4]
        events = [
            user_defined_event({"team": "abcd"[i % 4], "trial": i, "dropout": (i % 5) / 10}),
            dataset_graph_event(
                {
                    "op_type": "DataLoader",
                    "batch_size": batch,
                    "children": [{"op_type": "TensorDataset", "children": []}],
                }
            ),
            train_event(
                TrainValues(
                    optimizer=OPTIMIZERS[i % 4],
                    learning_rate=0.0001 * (1 + i % 100),
                    loss_function="CrossEntropyLoss",
                    epoch=1 + i % 10,
                    device_num=1,
                    batch_size=batch,
                    train_dataset_path="/data/train",
                    train_dataset_size=50_000,
                    network=("ResNet18", "MLP", "ViT")[i % 3],
                    loss=1.0 / (1 + i % 97),
                    model_size=10_000 + i,
                )
            ),
            eval_event(
                EvalValues(
                    metrics={
                        "accuracy": (i * 7919 % 1000) / 1000,
                        "f1": (i * 104729 % 1000) / 1000,
                    },
                    valid_dataset_path="/data/test",
                    valid_dataset_size=10_000,
                )
            ),
            run_event(RunValues(status="finished", start_time=now - 100, end_time=now)),
        ]
        data = b"".join(frame(e.SerializeToString()) for e in events)
        (run / f"events.out.events.summary.{now}.0.bench_lineage").write_bytes(data)


class Server:
    def __init__(self, base: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.started_at = time.perf_counter()
        app = create_app(base, store=IndexedRunStore(base))
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.005)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)

    def stop(self) -> None:
        self.client.close()
        self.server.should_exit = True
        self.thread.join(30)


FIRST_PAGE = {"offset": 0, "limit": 20}


def first_page_after_start(base: Path) -> tuple[float, Server]:
    server = Server(base)
    r = server.client.post("/api/v1/runs", json=FIRST_PAGE)
    r.raise_for_status()
    return time.perf_counter() - server.started_at, server


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def _percentile(times: list[float], q: float) -> float:
    times = sorted(times)
    return times[min(len(times) - 1, int(len(times) * q))]


def concurrent_exports(server: Server, clients: int, rounds: int, same: bool) -> dict[str, float]:
    """``clients`` threads export the CSV ``rounds`` times each; one thread loads pages.

    ``same``: every export asks for the same table; otherwise each asks for a different one
    (a no-op filter with a new bound), so no answer can be reused.
    """
    url = f"http://127.0.0.1:{server.port}"
    exports: list[float] = []
    pages: list[float] = []
    done = threading.Event()
    start = threading.Barrier(clients + 1)

    bounds = iter(range(1, 1_000_000))

    def condition() -> dict[str, Any]:
        if same:
            return {"sorted_name": "loss"}
        return {"sorted_name": "loss", "learning_rate": {"gt": -next(bounds)}}

    def exporter() -> None:
        with httpx.Client(base_url=url, timeout=600) as c:
            start.wait()
            for _ in range(rounds):
                t = time.perf_counter()
                r = c.post("/api/v1/runs/export.csv", json=condition())
                r.raise_for_status()
                exports.append(time.perf_counter() - t)

    def pager() -> None:
        with httpx.Client(base_url=url, timeout=600) as c:
            start.wait()
            k = 0
            while not done.is_set():
                k = (k + 1) % 50
                t = time.perf_counter()
                c.post("/api/v1/runs", json={"offset": k, "limit": 20}).raise_for_status()
                pages.append(time.perf_counter() - t)
                time.sleep(0.02)

    alone = timed(
        lambda: server.client.post("/api/v1/runs/export.csv", json=condition()).raise_for_status(),
        5,
    )[0]
    threads = [threading.Thread(target=exporter) for _ in range(clients)]
    page_thread = threading.Thread(target=pager)
    page_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    page_thread.join()
    return {
        "export alone (median)": alone,
        "export under load (median)": statistics.median(exports),
        "export under load (p95)": _percentile(exports, 0.95),
        "page under load (median)": statistics.median(pages),
        "page under load (p99)": _percentile(pages, 0.99),
        "pages loaded": float(len(pages)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--exports", type=int, default=0, help="concurrent export clients")
    parser.add_argument("--export-rounds", type=int, default=3)
    parser.add_argument("--only-exports", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tl-ui-bench-") as tmp:
        base = Path(tmp) / "runs"
        t = time.perf_counter()
        generate(base, args.runs)
        print(f"generated {args.runs} runs in {time.perf_counter() - t:.1f} s")

        if args.only_exports:
            _, server = first_page_after_start(base)
            report_exports(server, args.exports, args.export_rounds)
            server.stop()
            return
        cold, server = first_page_after_start(base)
        server.stop()
        warm, server = first_page_after_start(base)
        print(f"first page after start-up, no index (cold): {cold * 1000:8.0f} ms")
        print(
            f"first page after start-up, index on disk:   {warm * 1000:8.0f} ms   (target < 1000)"
        )

        c = server.client
        page = [0]

        def post(body: dict[str, Any], **params: Any) -> Callable[[], Any]:
            def call() -> Any:
                page[0] = (page[0] + 1) % 50
                payload = json.loads(json.dumps(body).replace('"PAGE"', str(page[0])))
                r = c.post("/api/v1/runs", json=payload, params=params)
                r.raise_for_status()
                return r

            return call

        cases: dict[str, Callable[[], Any]] = {
            "sort by metric, page k": post(
                {
                    "sorted_name": "metric/accuracy",
                    "sorted_type": "descending",
                    "offset": "PAGE",
                    "limit": 20,
                }
            ),
            "filter lr range + sort": post(
                {
                    "learning_rate": {"ge": 0.002, "le": 0.006},
                    "sorted_name": "loss",
                    "offset": "PAGE",
                    "limit": 20,
                }
            ),
            "filter str in + user_defined": post(
                {
                    "optimizer": {"in": ["Adam", "SGD"]},
                    "user_defined/team": {"eq": "a"},
                    "offset": "PAGE",
                    "limit": 50,
                }
            ),
            "--where expressions": post(
                {"offset": "PAGE", "limit": 20}, where=["batch_size >= 32", "metric/f1 > 0.5"]
            ),
            "brush (2 axes) + hidden runs": post(
                {
                    "metric/accuracy": {"ge": 0.2, "le": 0.9},
                    "epoch": {"ge": 3, "le": 8},
                    "summary_dir": {"not_in": ["./run00001", "./run00002"]},
                    "offset": "PAGE",
                    "limit": 20,
                }
            ),
        }
        print(f"\nlater requests over HTTP ({args.repeat} each; median / p95):")
        for name, fn in cases.items():
            med, p95 = timed(fn, args.repeat)
            print(f"  {name:32s} {med * 1000:7.1f} ms / {p95 * 1000:7.1f} ms   (target < 100)")

        def points() -> None:
            c.post(
                "/api/v1/runs/points",
                json={
                    "columns": ["learning_rate", "batch_size", "optimizer", "metric/accuracy"],
                    "where": ["epoch >= 2"],
                },
            ).raise_for_status()

        def columns() -> None:
            c.post("/api/v1/runs/columns", json={}).raise_for_status()

        for name, fn in (("chart data (all runs, 4 cols)", points), ("column chooser", columns)):
            med, p95 = timed(fn, max(3, args.repeat // 4))
            print(f"  {name:32s} {med * 1000:7.1f} ms / {p95 * 1000:7.1f} ms")
        if args.exports:
            report_exports(server, args.exports, args.export_rounds)
        server.stop()


def report_exports(server: Server, clients: int, rounds: int) -> None:
    for same in (False, True):
        table = "the same table" if same else "different tables"
        print(f"\n{clients} clients exporting {table} as CSV x{rounds}, one loading pages:")
        for name, value in concurrent_exports(server, clients, rounds, same).items():
            shown = f"{value:8.0f}" if name == "pages loaded" else f"{value * 1000:8.0f} ms"
            print(f"  {name:32s} {shown}")


if __name__ == "__main__":
    main()
