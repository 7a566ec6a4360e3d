"""API failures → `Status` objects with the code and reason a real API server would send."""

from __future__ import annotations

from typing import Any

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
}


class ApiError(Exception):
    """An error the API answers with; `status()` is the body the client deserialises."""

    def __init__(self, code: int, message: str, reason: str | None = None, *,
                 kind: str | None = None, name: str | None = None, group: str | None = None,
                 causes: list[dict] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details: dict[str, Any] = {k: v for k, v in (("name", name), ("group", group), ("kind", kind)) if v}
        if causes:
            self.details["causes"] = causes

    def status(self) -> dict:
        """The `Status` body, its keys in the order the real server writes them."""
        body: dict = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": self.message, "reason": self.reason}
        if self.details:
            body["details"] = self.details
        body["code"] = self.code
        return body


def _what(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(404, f'{_what(resource, group)} "{name}" not found', kind=resource, name=name, group=group)


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(409, f'{_what(resource, group)} "{name}" already exists', "AlreadyExists",
                    kind=resource, name=name, group=group)


def conflict(resource: str, group: str, name: str) -> ApiError:
    return ApiError(409, f'Operation cannot be fulfilled on {_what(resource, group)} "{name}": the object '
                         "has been modified; please apply your changes to the latest version and try again",
                    "Conflict", kind=resource, name=name, group=group)


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; each cause is (reason type, field path, message).  The message names the kind
    qualified by its group (`Job.batch`) and brackets several errors, as Go's aggregate error does."""
    texts = list(dict.fromkeys(f"{field}: {msg}" for _, field, msg in causes))
    text = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    qualified = f"{kind}.{group}" if group else kind
    return ApiError(422, f'{qualified} "{name}" is invalid: {text}', "Invalid", kind=kind, name=name, group=group,
                    causes=[{"reason": r, "message": m, "field": f} for r, f, m in causes])


def bad_request(message: str) -> ApiError:
    return ApiError(400, message, "BadRequest")


def resource_missing() -> ApiError:
    return ApiError(404, "the server could not find the requested resource", "NotFound")


def method_not_allowed(verb: str, resource: str) -> ApiError:
    return ApiError(405, f"{verb} is not supported on resources of kind \"{resource}\"", "MethodNotAllowed")
