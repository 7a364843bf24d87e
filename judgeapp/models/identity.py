"""Who answers a judge's call: its server and its model, spelled one way, so that two spellings of one model
are one judge (a jury cannot seat it twice, a judge cannot grade itself under another spelling).

Plain Python. The rules, and why:
- the scheme and the host are case-insensitive (RFC 3986); the path and the query are not, and stay as given;
- the loopback names are one host, `localhost`: `localhost`, `127.0.0.1`, `::1` (`[::1]`, and any spelling
  of those addresses, `::ffff:127.0.0.1` too) and the unspecified addresses `0.0.0.0` and `::`, which a
  server prints when it listens on every interface and which reach this machine when called. Another
  127.x address (127.0.0.2) can be another server, so it stays itself;
- a default port is no port (http 80, https 443); a trailing dot on a host name, trailing slashes on the
  path, a user name or password before the host and a fragment (never sent) are dropped;
- a base URL without a scheme is read as http; a blank one is the OpenAI client's own default;
- the model name is case-insensitive (`SmolLM2` is `smollm2`), surrounding blanks dropped.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

# What the openai client calls when neither the endpoint nor OPENAI_BASE_URL names a server.
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOOPBACK = "localhost"
DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK_ADDRESSES = {ipaddress.ip_address(a) for a in ("127.0.0.1", "::1", "0.0.0.0", "::")}


def _host(hostname: str) -> str:
    """The host as compared: lower case, loopback names as `localhost`, an IP address in its short form."""
    host = hostname.lower().rstrip(".")
    if host == LOOPBACK:
        return LOOPBACK
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    mapped = getattr(address, "ipv4_mapped", None)
    if address in _LOOPBACK_ADDRESSES or mapped in _LOOPBACK_ADDRESSES:
        return LOOPBACK
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def base_url_normalise(base_url: str) -> str:
    """One spelling of a server's base URL (the rules in the module's docstring)."""
    text = (base_url or "").strip() or OPENAI_DEFAULT_BASE_URL
    if "://" not in text:
        text = f"http://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:  # a port that is not a number, a broken IPv6 literal: compared as written
        return text.rstrip("/").lower()
    scheme = parts.scheme.lower()
    host = _host(parts.hostname or "")
    netloc = host if port is None or DEFAULT_PORTS.get(scheme) == port else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def model_normalise(model: str) -> str:
    return (model or "").strip().lower()


def identity_normalise(base_url: str, model: str) -> tuple[str, str]:
    """(base URL, model) spelled one way: two endpoints with the same result are one model at one server."""
    return base_url_normalise(base_url), model_normalise(model)
