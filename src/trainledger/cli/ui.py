"""``trainledger ui BASE``: serve the web UI over the runs under BASE."""

from __future__ import annotations

import socket
import threading
import webbrowser
from pathlib import Path

import click

from trainledger.cli.locations import index_option, keep_fresh, local_copy
from trainledger.server import MIN_TOKEN_LENGTH, allowed_hosts, is_loopback
from trainledger.storage import READ_MAX_AGE, is_object_url

__all__ = ["is_loopback", "ui", "ui_url"]


def ui_url(host: str, port: int, token: str | None = None) -> str:
    """The URL to open; with a token it carries ``?token=`` so the browser gets its cookie."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


@click.command("ui")
@click.argument("base")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind. Anything but loopback exposes your runs to the network.",
)
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    envvar="TRAINLEDGER_TOKEN",
    default=None,
    help="Require this token on every request (header, or cookie set by the "
    "printed ?token= link). Also read from TRAINLEDGER_TOKEN.",
)
@click.option(
    "--read-token",
    envvar="TRAINLEDGER_READ_TOKEN",
    default=None,
    help="A second token that may only read (tags, remarks, archive and delete answer 403). "
    "Also read from TRAINLEDGER_READ_TOKEN.",
)
@click.option(
    "--allowed-host",
    "extra_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests for this Host name (repeatable). By default only the bound "
    "address (and loopback names when bound to loopback) are answered: a page on another "
    "site cannot reach the UI through DNS rebinding.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
@click.option(
    "--max-depth",
    default=1,
    show_default=True,
    type=click.IntRange(0, 16),
    help="How many directory levels below BASE to look for runs.",
)
@click.option(
    "--max-connections",
    default=256,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Open connections at most; beyond it the oldest idle one is closed.",
)
@click.option(
    "--idle-timeout",
    default=15.0,
    show_default=True,
    type=click.FloatRange(min=0.01),
    help="Seconds an idle keep-alive connection is kept open.",
)
@click.option(
    "--head-timeout",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0.01),
    help="Seconds a client has to send a whole request head.",
)
@index_option
def ui(
    base: str,
    host: str,
    port: int,
    token: str | None,
    read_token: str | None,
    extra_hosts: tuple[str, ...],
    open_browser: bool,
    max_depth: int,
    max_connections: int,
    idle_timeout: float,
    head_timeout: float,
    index: str | None,
) -> None:
    """Browse, compare and export the runs under BASE in a web browser."""
    try:  # the [ui] extra: imported here so the rest of the CLI works without it
        from trainledger.query import index_url, redact_url
        from trainledger.server import IndexedRunStore, create_app, serve
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise click.ClickException(
            f"the web UI needs the [ui] extra: pip install 'trainledger[ui]' ({exc})"
        ) from exc
    for given, hint in ((token, "--token"), (read_token, "--read-token")):
        if given is not None and len(given) < MIN_TOKEN_LENGTH:
            raise click.BadParameter(
                f"expected at least {MIN_TOKEN_LENGTH} characters, received {len(given)} "
                "(e.g. python -c 'import secrets; print(secrets.token_urlsafe())')",
                param_hint=hint,
            )
    if not is_loopback(host) and token is None and read_token is None:
        click.secho(
            f"warning: binding {host} without --token: anyone who can reach this machine "
            "can read your runs and edit their tags and remarks.",
            fg="yellow",
            err=True,
        )
    # an s3:// base: the index's copy (event files sidecars describe left in the store; a
    # run's page downloads its own files), refreshed below
    local = local_copy(base, for_index=True)
    if is_object_url(base):
        keep_fresh(base, READ_MAX_AGE)
    app = create_app(
        local,
        token=token,
        read_token=read_token,
        store=IndexedRunStore(
            Path(local),
            max_depth=max_depth,
            index=index,
            name=base.rstrip("/") if is_object_url(base) else None,
            remote=base if is_object_url(base) else None,
        ),
        allowed_hosts=allowed_hosts(host, extra_hosts),
    )
    _check_port_free(host, port)  # before saying "serving": uvicorn would fail after it
    url = ui_url(host, port, token or read_token)
    chosen = index_url(index)
    where = f" (index {redact_url(chosen)})" if chosen else ""
    click.echo(f"trainledger ui: serving {base}{where} at {url}  (Ctrl+C to stop)")
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    serve(
        app,
        host,
        port,
        idle_timeout=idle_timeout,
        head_timeout=head_timeout,
        max_connections=max_connections,
    )


def _check_port_free(host: str, port: int) -> None:
    """A clear error when ``host:port`` cannot be bound (in use, or not an address here)."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise click.ClickException(
                f"cannot serve on {host}:{port} ({exc.strerror or exc}): another program "
                f"uses the port? choose another one with --port"
            ) from exc
