"""Whether a request carries the server's token, and if not, why not.

A client sends the token as ``Authorization: Bearer <token>``, or as the password
of HTTP Basic auth (any user name). The Basic form is for clients that cannot set
headers but take a URL: ``requests`` and ``httpx`` send a URL's user info,
``http://agentgym:<token>@host:8000/...``, as Basic auth, so AgentGym's env clients
(which build their URLs as ``f"{base}/create"``) and OpenEnv's carry the token in
their base URL, unchanged.

>>> import base64
>>> basic = b"Basic " + base64.b64encode(b"agentgym:s3cret")
>>> [token_problem(h, "s3cret") for h in (b"Bearer s3cret", basic)]
[None, None]
>>> token_problem(b"Bearer wrong", "s3cret")
"The token sent is not the server's token."
"""

from __future__ import annotations

import base64
import binascii
import hmac

__all__ = ["TOKEN_HOWTO", "token_problem"]

TOKEN_HOWTO = ("Send the server's token as 'Authorization: Bearer <token>', or as the password of HTTP Basic auth: "
               "in a URL, http://agentgym:<token>@host:port/... (requests and httpx send that as Basic auth).")


def token_problem(authorization: bytes, token: str) -> str | None:
    """Why the ``Authorization`` header value ``authorization`` does not carry ``token`` (None: it does).

    The secret sent is compared with ``token`` in constant time.
    """
    if not authorization:
        return "This server needs its token."
    scheme, _, credentials = authorization.partition(b" ")
    secret = credentials.strip()
    if scheme.lower() == b"basic":
        try:
            secret = base64.b64decode(secret, validate=True).partition(b":")[2]
        except binascii.Error:
            return "The Basic credentials are not base64 of 'user:token'."
    elif scheme.lower() != b"bearer":
        return f"Authorization scheme {scheme.decode('latin-1')[:20]!r} is not served: use Bearer or Basic."
    if not hmac.compare_digest(secret, token.encode("utf-8")):
        return "The token sent is not the server's token."
    return None
