"""How an answer of the API reads: a success as the call's model, a refusal as :class:`ApiError`."""

from __future__ import annotations

import json
from typing import TypeVar

import httpx
import pydantic

from ..api.calls import Call

T = TypeVar("T")


class ApiError(Exception):
    """The server refused a call (or could not be reached): ``code``, ``message``, ``status``."""

    def __init__(self, code: str, message: str, status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


def unreachable(url: str, exc: httpx.HTTPError) -> ApiError:
    """The error for a server that did not answer at all."""
    return ApiError("UNAVAILABLE", f"cannot reach the server at {url}: {exc}")


def read_answer(call: Call[T], response: httpx.Response) -> T:
    """The call's answer, or the API's refusal raised as :class:`ApiError`."""
    if response.is_success:
        try:
            return call.read(response.content)
        except pydantic.ValidationError as exc:
            raise ApiError(
                "BAD_ANSWER", f"{call.method} {call.path} answered what the API does not: {exc}",
                response.status_code,
            ) from None  # fmt: skip
    raise refusal(response)


def refusal(response: httpx.Response) -> ApiError:
    """The API's ``{"error": {code, message}}`` as an exception (``HTTP_ERROR`` without one)."""
    try:
        body = response.json() if response.content else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return ApiError(str(error.get("code")), str(error.get("message")), response.status_code)
    return ApiError("HTTP_ERROR", f"HTTP {response.status_code}", response.status_code)
