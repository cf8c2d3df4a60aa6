"""metav1.Status bodies, shaped byte for byte like the apiserver's (captures 4x, 6x, 8x, 9x).

Handlers raise ApiError; the HTTP layer turns it into the status code and body.
"""

import orjson

_REASON_TEXT = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
                409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType",
                422: "Invalid", 500: "InternalError", 503: "ServiceUnavailable"}


def status_body(code: int, message: str | None = None, reason: str | None = None,
                details: dict | None = None, *, success: bool = False,
                metadata: dict | None = None) -> dict:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": metadata or {},
            "status": "Success" if success else "Failure"}
    if message is not None:
        body["message"] = message
    if not success:
        body["reason"] = reason or _REASON_TEXT.get(code, "Unknown")
    if details is not None:
        body["details"] = details
    if code:
        body["code"] = code
    return body


class ApiError(Exception):
    """An API failure carrying the HTTP status and the Status body to send."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict | None = None, metadata: dict | None = None):
        super().__init__(message)
        self.code = code
        self.body = status_body(code, message, reason, details, metadata=metadata)

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.body) + b"\n"


def not_found(resource: str, name: str) -> ApiError:
    return ApiError(404, f'{resource} "{name}" not found', "NotFound",
                    {"name": name, "kind": resource})


def already_exists(resource: str, name: str) -> ApiError:
    return ApiError(409, f'{resource} "{name}" already exists', "AlreadyExists",
                    {"name": name, "kind": resource})


def conflict(resource: str, name: str) -> ApiError:
    return ApiError(409, f'Operation cannot be fulfilled on {resource} "{name}": the object '
                         "has been modified; please apply your changes to the latest version "
                         "and try again", "Conflict", {"name": name, "kind": resource})


def bad_request(message: str) -> ApiError:
    return ApiError(400, message, "BadRequest")


def invalid(kind: str, name: str, causes: list) -> ApiError:
    """422 Invalid; causes are (reason, message, field) as in capture 61."""
    text = ", ".join(f"{f}: {m}" for _, m, f in causes)
    if len(causes) > 1:
        text = f"[{text}]"
    return ApiError(422, f'{kind} "{name}" is invalid: {text}', "Invalid", {
        "name": name, "kind": kind,
        "causes": [{"reason": r, "message": m, "field": f} for r, m, f in causes]})


def expired(message: str, metadata: dict | None = None) -> ApiError:
    return ApiError(410, message, "Expired", metadata=metadata)


def too_old_watch_status(requested: int, oldest: int) -> dict:
    """The ERROR event object a watch from a compacted resourceVersion receives."""
    return status_body(410, f"too old resource version: {requested} ({oldest})", "Expired")
