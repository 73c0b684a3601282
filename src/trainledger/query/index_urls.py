"""Where a base's index lives, as a URL: none (the SQLite file beside the runs) or a
``postgresql://`` database shared by a team; and the URL as it may be shown (no password)."""

from __future__ import annotations

import os
import re
import urllib.parse

from trainledger.errors import LineageParamValueError

__all__ = ["ENV", "index_url", "redact_url"]

ENV = "TRAINLEDGER_INDEX_URL"
_PG_SCHEMES = ("postgresql", "postgres")
_SQLITE = ("", "sqlite", "sqlite://")


def redact_url(url: str) -> str:
    """``url`` with its password (in the netloc or a ``password=`` parameter) as ``***``:
    URLs are shown in logs and errors, passwords never."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<an unparsable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = re.sub(r"(?i)(password=)[^&]*", r"\1***", parts.query)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def index_url(index: str | None = None) -> str | None:
    """The chosen index: ``index``, else ``$TRAINLEDGER_INDEX_URL``; None means the SQLite
    file beside the runs (also chosen explicitly by ``sqlite://``)."""
    value = index if index is not None else os.environ.get(ENV, "")
    if not isinstance(value, str):
        raise LineageParamValueError(
            f"ValueError. The index should be a str (a postgresql:// URL), received: "
            f"{type(value).__name__}."
        )
    value = value.strip()
    if value in _SQLITE:
        return None
    scheme = value.split("://", 1)[0].lower() if "://" in value else ""
    if scheme in _PG_SCHEMES:
        return value
    source = "index" if index is not None else ENV
    shown = redact_url(value) if scheme else repr(value)
    raise LineageParamValueError(
        f"ValueError. The {source} should be a postgresql://USER@HOST[:PORT]/DATABASE URL, or "
        f"sqlite:// for the SQLite file beside the runs (the default), received: {shown} "
        f"(scheme {scheme or 'none'!r})."
    )
