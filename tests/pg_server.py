"""A real PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` on 127.0.0.1, started here.

``pg_server`` (session) creates a cluster in a temp dir on a free port, listening on
127.0.0.1 only (no Unix socket outside the temp dir), and stops it at the end. initdb refuses
to run as root, so as root the cluster belongs to the ``postgres`` user and every server
command runs through ``runuser -u postgres --``. Waits are bounded loops. ``pg_url`` gives
each test a database of its own (a fresh index).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.s3_server import _free_port

_BIN_GLOB = "/usr/lib/postgresql/*/bin"


def _bin_dir() -> str | None:
    """Debian's versioned server binaries (``pg_ctl`` on PATH may be a wrapper without
    ``pg_isready`` beside it), else the directory of ``initdb`` on PATH."""
    dirs = sorted(glob.glob(_BIN_GLOB))
    if dirs:
        return dirs[-1]
    found = shutil.which("initdb")
    return os.path.dirname(found) if found else None


@dataclass
class PgServer:
    """A running cluster: its URL (user ``postgres``, no password, trust on 127.0.0.1)."""

    bindir: str
    datadir: str
    port: int
    as_postgres: list[str]

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def ctl(self, *args: str, timeout: float = 60) -> None:
        cmd = [*self.as_postgres, f"{self.bindir}/pg_ctl", "-D", self.datadir, "-w", *args]
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)

    def restart(self) -> None:
        """``pg_ctl restart`` (fast shutdown: every open connection is cut)."""
        self.ctl("restart", "-m", "fast", "-l", f"{self.datadir}/server.log")

    def create_database(self) -> str:
        import psycopg

        name = f"tl_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    try:
        import psycopg  # noqa: F401 - the postgres extra, part of dev
    except ImportError:
        pytest.fail("psycopg is not installed: `make install` installs the postgres extra")
    bindir = _bin_dir()
    if bindir is None:
        pytest.fail("PostgreSQL is not installed: `make system-deps` installs it")
    root = os.geteuid() == 0
    as_postgres = ["runuser", "-u", "postgres", "--"] if root else []
    tmp = tempfile.mkdtemp(prefix="tl-pg-")
    datadir = os.path.join(tmp, "data")
    if root:
        shutil.chown(tmp, "postgres", "postgres")
    port = _free_port()
    server = PgServer(bindir, datadir, port, as_postgres)
    subprocess.run(
        [*as_postgres, f"{bindir}/initdb", "-D", datadir, "-U", "postgres", "-A", "trust"]
        + ["-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    with open(os.path.join(datadir, "postgresql.conf"), "a") as conf:
        conf.write(
            f"listen_addresses = '127.0.0.1'\nport = {port}\n"
            f"unix_socket_directories = '{tmp}'\nfsync = off\nmax_connections = 200\n"
        )
    try:
        server.ctl("start", "-t", "60", "-l", f"{datadir}/server.log", timeout=90)
        deadline = time.monotonic() + 60
        while subprocess.run(
            [f"{bindir}/pg_isready", "-h", "127.0.0.1", "-p", str(port)], capture_output=True
        ).returncode:
            if time.monotonic() > deadline:
                raise RuntimeError("PostgreSQL did not accept connections within 60 s")
            time.sleep(0.1)
        yield server
    finally:
        try:
            server.ctl("stop", "-m", "immediate", timeout=60)
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A new empty database on the session's server."""
    return pg_server.create_database()


__all__ = ["PgServer", "pg_server", "pg_url"]
