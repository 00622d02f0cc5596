"""Who a request is from: a client is what it cannot choose, its host, or a token the operator issued it.

A bearer token does not tell clients apart (a server has one token, which all its clients send; without
``--token`` any made-up token would be a new client), and neither does an ``X-Forwarded-For`` header unless the
server was told to trust the proxy that sends it (``agentgym serve --forwarded-allow-ips``: uvicorn then puts the
forwarded address in the peer's place; by default it takes no forwarded header at all). Nor does the address a
host chooses to connect from: every loopback address (127.0.0.0/8, ::1) is one client, an IPv4-mapped IPv6
address is its IPv4 address, and an IPv6 address counts as its /64 network (one host's, as providers hand them
out; ``--ipv6-client-prefix`` changes the length). A client that wants a share of its own on a host it shares (a
local trainer beside an eval) gets it by a token the operator issued it (``agentgym serve --client-token
NAME=TOKEN``): a request that carries one is client ``NAME`` from any address, and is authorized as with the
server's token. Per-client limits key on this: ``/v1/verify`` in flight, open WebSockets, open sessions, and the
env worker threads' fair queue.

The client of the request being served is in ``CURRENT_CLIENT`` (set by the server's front door for every HTTP
request and WebSocket), so code deep in a request (the env threads) reads it without it being passed along.

>>> [address_client(a) for a in ("127.0.0.2", "::1", "::ffff:10.1.2.3", "10.1.2.3", "2001:db8::1:2")]
['loopback', 'loopback', '10.1.2.3', '10.1.2.3', '2001:db8::/64']
"""

from __future__ import annotations

import contextvars
import hmac
import ipaddress
import os
import re
from collections.abc import Mapping

from starlette.types import Scope

from agentgym.errors import ConfigError

__all__ = ["CURRENT_CLIENT", "IPV6_PREFIX_ENV", "ClientTokens", "address_client", "client_key"]

#: the client (``client_key``) of the request this code serves; "" outside requests
CURRENT_CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("agentgym_client", default="")
#: the IPv6 prefix length one client's addresses share (``agentgym serve --ipv6-client-prefix``; read from the
#: environment so that every process of a ``--processes N`` server takes it)
IPV6_PREFIX_ENV = "AGENTGYM_IPV6_CLIENT_PREFIX"
DEFAULT_IPV6_PREFIX = 64
#: where the front door puts the client a request carries an issued token of
SCOPE_KEY = "agentgym.client"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_PEER = b"x-agentgym-peer"  # affinity.PEER (that module imports this one)


def ipv6_prefix() -> int:
    raw = os.environ.get(IPV6_PREFIX_ENV, "")
    if not raw:
        return DEFAULT_IPV6_PREFIX
    if not raw.isdigit() or not 0 <= int(raw) <= 128:
        raise ConfigError(f"{IPV6_PREFIX_ENV}={raw!r}: the IPv6 client prefix is a length from 0 to 128 (default "
                          f"{DEFAULT_IPV6_PREFIX}).")
    return int(raw)


def address_client(host: str, prefix: int | None = None) -> str:
    """The client the peer address ``host`` counts as: ``loopback`` for every loopback address, an IPv4-mapped
    IPv6 address's IPv4 address, an IPv6 address's network of ``prefix`` bits (default 64), an IPv4 address
    itself; anything else (a Unix socket's name) as it is."""
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "loopback"
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/{ipv6_prefix() if prefix is None else prefix}", strict=False))
    return str(ip)


def client_key(scope: Scope) -> str:
    """The client a request or connection counts against: the issued token's name it carries (``client:NAME``),
    else its peer's address (uvicorn's, after a proxy the server was told to trust) as ``address_client`` counts
    it."""
    issued = scope.get(SCOPE_KEY)
    if issued:
        return str(issued)
    client = scope.get("client")
    if client:
        return address_client(str(client[0]))
    # no peer address: the private unix socket a sibling process of `--processes N` passes a request on through,
    # naming the address it came from (a TCP peer always has an address, so it cannot name one)
    peer = next((value for name, value in scope.get("headers", ()) if name == _PEER), None)
    return address_client(peer.decode("latin-1")) if peer else "unknown"


def _secret(authorization: bytes) -> bytes | None:
    """The secret an Authorization header carries (Bearer, or the password of Basic), or None."""
    import base64
    import binascii

    scheme, _, credentials = authorization.partition(b" ")
    secret = credentials.strip()
    if scheme.lower() == b"basic":
        try:
            return base64.b64decode(secret, validate=True).partition(b":")[2]
        except binascii.Error:
            return None
    return secret if scheme.lower() == b"bearer" else None


class ClientTokens:
    """Tokens the operator issued to named clients: ``{name: token}``. A request whose Authorization header
    carries one is that client, whatever its address (``agentgym serve --client-token NAME=TOKEN``)."""

    def __init__(self, tokens: Mapping[str, str], server_token: str | None) -> None:
        for name, token in tokens.items():
            if not _NAME.fullmatch(name):
                raise ConfigError(f"--client-token {name!r}: a client's name is 1-64 letters, digits, '.', '_' or "
                                  "'-', starting with a letter or digit.")
            if len(token) < 16:
                raise ConfigError(f"--client-token {name}=...: an issued token needs at least 16 characters (one a "
                                  "client could guess would let anyone take that client's share).")
            if token == server_token:
                raise ConfigError(f"--client-token {name}=...: the same as the server's --token; issue each client "
                                  "a token of its own.")
        if len(set(tokens.values())) < len(tokens):
            raise ConfigError("--client-token: two clients were issued the same token; issue each its own.")
        self.tokens = {name: token.encode("utf-8") for name, token in tokens.items()}

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def client_of(self, authorization: bytes) -> str | None:
        """The name of the client whose issued token the header carries (compared in constant time), or None."""
        secret = _secret(authorization) if authorization else None
        if secret is None:
            return None
        found = None
        for name, token in self.tokens.items():
            if hmac.compare_digest(secret, token):
                found = name
        return found
