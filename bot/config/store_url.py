"""A PostgreSQL store URL as it may be shown, and the one mistake in it that would leak it.

The URL's password is everything between the user's ``:`` and the LAST ``@`` before the host:
a password holding an unencoded ``@`` or ``/`` is cut in the wrong place by URL parsers (they
took part of it for the host), and the part after the cut was then printed as if it were the
host. So the masking here never parses the URL: it hides everything up to the last ``@``, and
the config refuses such a URL with the fix, since libpq would misread it too.
"""

from __future__ import annotations

ENCODE_HINT = "percent-encode @ : / in the password as %40 %3A %2F"


def _split(url: str) -> tuple[str, str | None, str]:
    """``(scheme, userinfo or None, the rest: host, path, query)``."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return "", None, url
    before_query, question, query = rest.partition("?")  # a query may hold @ (app@prod)
    userinfo, at, host = before_query.rpartition("@")
    return scheme, (userinfo if at else None), host + question + query


def userinfo_problem(url: str) -> str | None:
    """Why the user and password part cannot be read as meant, or None. Never shows them."""
    _, userinfo, _ = _split(url)
    if userinfo is not None and ("@" in userinfo or "/" in userinfo):
        return f"the user name or password holds an unencoded @ or /; {ENCODE_HINT}"
    return None


def redact_url(url: str) -> str:
    """The URL for messages and logs: the user kept, the password and any query (libpq also
    takes ``?password=``) hidden."""
    scheme, userinfo, rest = _split(url)
    if not scheme:
        return "postgresql://…"
    shown = ""
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        shown = f"{user}:***@" if colon else f"{user}@"
        if "@" in user or "/" in user:  # not a user name: a password cut in the wrong place
            shown = "***@"
    where, question, _ = rest.partition("?")
    return f"{scheme}://{shown}{where}{'?…' if question else ''}"


def masked_url(url: str, mask: str) -> str:
    """The URL with only its password replaced by ``mask``: still a URL the config accepts, so
    a printed config can be fed back (the query is kept: it may hold settings, not only a
    ``password=``, which is masked too)."""
    scheme, userinfo, rest = _split(url)
    if not scheme or (userinfo is not None and userinfo_problem(url)):
        return f"{scheme or 'postgresql'}://{mask}"
    shown = ""
    if userinfo is not None:
        user, colon, _ = userinfo.partition(":")
        shown = f"{user}:{mask}@" if colon else f"{user}@"
    where, question, query = rest.partition("?")
    if question:
        pairs = [
            f"{key}={mask}" if "password" in key.lower() and sep else f"{key}{sep}{value}"
            for key, sep, value in (pair.partition("=") for pair in query.split("&"))
        ]
        where = f"{where}?{'&'.join(pairs)}"
    return f"{scheme}://{shown}{where}"
