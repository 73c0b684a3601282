"""The redaction setting (``TRAINLEDGER_REDACT``) and the one way a value is blurred.

It lives in the ground package because file names carry the host name too (TensorBoard's
``tfevents.<ts>.<host>.<pid>`` and lineage files): with host redaction on, those names use the
blurred host that the lineage records (``lineage.redaction`` blurs the records themselves).
"""

from __future__ import annotations

import os

from trainledger.errors import LineageParamValueError

__all__ = ["REDACT_ENV", "REDACT_KINDS", "redaction_kinds", "digest8", "machine_name"]

REDACT_ENV = "TRAINLEDGER_REDACT"
REDACT_KINDS = ("command", "host", "paths")


def redaction_kinds(text: str | None = None) -> frozenset[str]:
    """The kinds asked for by ``text`` (default: the environment variable); ``all`` is all
    three; anything else is refused, saying what is accepted."""
    raw = os.environ.get(REDACT_ENV) if text is None else text
    words = {w.strip().lower() for w in (raw or "").split(",") if w.strip()}
    if "all" in words:
        return frozenset(REDACT_KINDS)
    if words - set(REDACT_KINDS):
        raise LineageParamValueError(
            f"{REDACT_ENV} expected a comma list of {', '.join(REDACT_KINDS)} or 'all', "
            f"received: {raw!r}"
        )
    return frozenset(words)


def digest8(text: str) -> str:
    """8 hex digits of SHA-256: the same value always blurs to the same name."""
    import hashlib  # (here: every query process imports this module, few blur a name)

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def machine_name() -> str:
    """This machine's host name, or ``host-<digest>`` when host redaction is on."""
    import socket  # (here: every query process imports this module, writers call this)

    host = socket.gethostname()
    return f"host-{digest8(host)}" if host and "host" in redaction_kinds() else host
