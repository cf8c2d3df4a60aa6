"""What the extender listener answers to an HTTP request: a WSGI application.

    POST {PREFIX}filter | {PREFIX}bind | {PREFIX}preempt

A verb's body is handed to the owner's thread through `OwnerCalls` (only that thread
touches the cache) and answered by the rules in `answers.py`. Every other request is
refused with {"Error": ...} and its connection closed: a Content-Length that is not a
number of bytes a 400, a body over `max_body` a 413 (both left unread), another method
a 405, an unknown path a 404, a verb's body with neither a Content-Length nor chunked
encoding a 411. kube-scheduler reads only the status of a non-200 answer (shared
k8s-wire/extender, README: "a non-200 answer's body is ignored").

Every change a call makes is recorded with its caller: the client certificate's subject
when the listener asks for one, else the address the call came from.
"""
import time
from email.utils import formatdate
from http import HTTPStatus

import orjson

from .answers import VERB_OPS, answer
from .filter_args import FilterArgsDecoder
from .owner_calls import OwnerCalls
from dashboard.wire.extender import PREFIX

# A filter without nodeCacheCapable carries whole Nodes: 5,000 of them are about 25 MB.
MAX_BODY = 32 * 1024 * 1024
_USAGE = f"POST {PREFIX}{{{','.join(VERB_OPS)}}}"
# Status lines made once: HTTPStatus(code) is an Enum lookup, a few percent of a call.
_STATUS_LINES = {s.value: f"{s.value} {s.phrase}" for s in HTTPStatus}


class _Refused(Exception):
    """A request answered with an error before it reaches the owner."""

    def __init__(self, status: int, message: str, headers=()):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, list(headers)


def caller(environ) -> str:
    """Who called, for the history: the client certificate's subject (cheroot's builtin
    TLS adapter puts it in the environ as mod_ssl does), else the address."""
    name = environ.get("SSL_CLIENT_S_DN_CN") or environ.get("SSL_CLIENT_S_DN_O")
    if name:
        return f"kube-scheduler ({name})"[:150]
    return f"kube-scheduler at {environ['REMOTE_ADDR']}"


_date = [None, ""]   # (second, its Date header): shared by the workers, replaced whole


def http_date(clock=time.time) -> str:
    """The Date header, formatted once a second (cheroot would format it for every answer)."""
    second, text = _date
    now = int(clock())
    if second != now:
        text = formatdate(now, usegmt=True)
        _date[:] = now, text
    return text


class ExtenderApp:
    """post_binding(uid, namespace, name, node) -> (outcome, reason): posts a bind's
    Binding (dashboard.kube.binding.bind_once) in the request's thread."""

    def __init__(self, calls: OwnerCalls, owner_timeout: float, post_binding,
                 max_body: int = MAX_BODY):
        self.calls, self.owner_timeout = calls, owner_timeout
        self.post_binding, self.max_body = post_binding, max_body
        self._filter_args = FilterArgsDecoder()

    def __call__(self, environ, start_response):
        try:
            status, body = self._answer(environ)
            headers = []
        except _Refused as refused:
            status, body = refused.status, {"Error": refused.message}
            headers = [*refused.headers, ("Connection", "close")]
        payload = orjson.dumps(body)
        start_response(_STATUS_LINES[status],
                       [("Content-Type", "application/json"),
                        ("Content-Length", str(len(payload))), ("Date", http_date()),
                        *headers])
        return [] if environ["REQUEST_METHOD"] == "HEAD" else [payload]

    def _answer(self, environ) -> tuple[int, dict]:
        method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
        op = VERB_OPS.get(path[len(PREFIX):]) if path.startswith(PREFIX) else None
        verb = method == "POST" and op is not None
        # Read before a 405 or 404 too: a client still sending the body reads the answer
        # (closing on unread bytes resets the connection, the answer with it).
        raw = self._body(environ, required=verb)
        if method != "POST":
            raise _Refused(405, f"{method} is not allowed: {_USAGE}", [("Allow", "POST")])
        if op is None:
            raise _Refused(404, f"no extender verb at {path}; {_USAGE}")
        actor = caller(environ)

        def call_owner(op, body):
            return self.calls.call(op, body, self.owner_timeout, actor)
        decode = self._filter_args if op == "extender_filter" else orjson.loads
        return answer(op, raw, call_owner, self.post_binding, decode)

    def _body(self, environ, required: bool) -> bytes:
        """The request's body, at most `max_body` bytes; a chunked one cheroot decodes.
        Without a length: a 411 if `required`, else none."""
        stream = environ["wsgi.input"]
        if environ["wsgi.input_terminated"]:
            raw = stream.read(self.max_body + 1)
        else:
            length = environ.get("CONTENT_LENGTH")
            if length is None:
                if not required:
                    return b""
                raise _Refused(411, "a Content-Length (or a chunked body) is required")
            if not (length.isascii() and length.isdigit()):
                raise _Refused(400, f"Content-Length {length!r} is not a number of bytes")
            if int(length) > self.max_body:
                raise _Refused(413, f"the body is {length} bytes; at most {self.max_body} "
                                    "are accepted")
            raw = stream.read(int(length))
            if len(raw) < int(length):
                raise _Refused(400, f"the body ended after {len(raw)} of {length} bytes")
        if len(raw) > self.max_body:
            raise _Refused(413, f"the body is over {self.max_body} bytes, which is the most "
                                "accepted")
        return raw
