"""``ApiError``: an error the server answers with (HTTP status, stable code, message); every server module
raises it, so it sits below them all."""

from __future__ import annotations

__all__ = ["ApiError"]


class ApiError(Exception):
    """An error the server answers with: HTTP status, stable code, message (and any headers, e.g. Retry-After)."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = dict(headers or {})
