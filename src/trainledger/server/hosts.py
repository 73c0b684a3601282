"""Exposure rules: which Host names the UI answers (DNS rebinding), loopback, token length.

Apart from ``security.py`` because the CLI needs these rules (is a bind address loopback?)
without the [ui] extra's web framework.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable

LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "127.0.0.1", "::1")
MIN_TOKEN_LENGTH = 16  # a shorter token could be guessed; secrets.token_urlsafe() gives 43


def parse_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` spells (``127.1`` and other inet_aton forms too), or None."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fA-FxX.]+", host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server reachable from this machine only."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    ip = parse_ip(host)
    return ip is not None and ip.is_loopback


def allowed_hosts(bind: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The Host names the server answers: the bound one, loopback names when bound to
    loopback, this machine's names when bound to every interface, and ``extra``."""
    names = {bind.strip("[]").lower(), *(e.strip("[]").lower() for e in extra)}
    if is_loopback(bind):
        names.update(LOOPBACK_NAMES)
    elif bind in ("0.0.0.0", "::", ""):
        names.update(LOOPBACK_NAMES)
        names.update(n.lower() for n in (socket.gethostname(), socket.getfqdn()) if n)
    return frozenset(names)
