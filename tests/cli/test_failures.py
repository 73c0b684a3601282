"""Every command fails in one line: an expected failure (a missing bucket, an unreachable
index, a permission) is ``trainledger: error: <cause>`` on stderr and exit status 1; the
traceback only with ``--debug``. Against a real S3 server (moto) and a closed port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.runs import make_base
from trainledger.cli import cli

REPO = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    with socket.socket() as sock:  # bound and closed again: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _one_line(stderr: str, *needles: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("trainledger: error: "), stderr
    assert all(n in lines[0] for n in needles), stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("command", ["lineage", "show"])
def test_a_missing_bucket_is_one_line(s3_env: dict[str, str], command: str) -> None:
    url = "s3://no-such-bucket-tl/runs" + ("/r0" if command == "show" else "")
    done = CliRunner().invoke(cli, [command, url])
    assert done.exit_code == 1, done.output
    _one_line(done.stderr, "no-such-bucket-tl")
    debug = CliRunner().invoke(cli, ["--debug", command, url])
    assert debug.exit_code == 1 and debug.exception is not None
    assert "no-such-bucket-tl" in str(debug.exception)  # raised, with its traceback


@pytest.mark.slow
def test_a_real_process_fails_in_one_line(s3_env: dict[str, str], tmp_path: Path) -> None:
    """The command as a user runs it: a missing bucket, an unreachable PostgreSQL index (a
    closed port, retried for a bounded time), a base that cannot be read."""
    env = {
        **os.environ,
        **s3_env,
        "PYTHONPATH": str(REPO / "src"),
        "TRAINLEDGER_INDEX_RETRY_SECONDS": "0.5",
        "TRAINLEDGER_CACHE_DIR": str(tmp_path / "cache"),
    }
    base = make_base(tmp_path / "runs", n=2, scalars=0)
    index = f"postgresql://nobody@127.0.0.1:{_closed_port()}/db"
    cases = [
        (["lineage", "s3://no-such-bucket-tl/runs"], "no-such-bucket-tl"),
        (["show", "s3://no-such-bucket-tl/runs/r0"], "no-such-bucket-tl"),
        (["lineage", str(base), "--index", index], "127.0.0.1"),
    ]
    for args, needle in cases:
        done = subprocess.run(
            [sys.executable, "-m", "trainledger", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 1, (args, done.stderr)
        _one_line(done.stderr, needle)
    debug = subprocess.run(
        [sys.executable, "-m", "trainledger", "--debug", *cases[0][0]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert debug.returncode == 1 and "Traceback" in debug.stderr
