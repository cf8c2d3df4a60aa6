"""The HTTP/1.1 front: routing, apiserver headers, Content-Length vs chunked framing.

A stdlib ThreadingHTTPServer (one thread per connection, keep-alive): enough for
the official client, sync or asyncio, and for long watches; the bytes come
pre-serialized from the store, so Python only frames and copies them.
Headers and framing follow the captures: bodies up to 2048 bytes get a
Content-Length, larger ones and all watches are chunked, one event per chunk.
"""

import base64
import re
import socket
import threading
import uuid
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import orjson

from simcluster import discovery
from simcluster.fields import manager_name
from simcluster.resources import FIELD_SELECTABLE
from simcluster.selectors import parse_field_selector, parse_label_selector
from simcluster.status import ApiError, bad_request, expired, status_body
from simcluster.watch import WatchRequest, serve_watch

_REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 410: "Gone",
            415: "Unsupported Media Type", 422: "Unprocessable Entity",
            500: "Internal Server Error", 503: "Service Unavailable"}
_FLOW_SCHEMA = b"8c073c8d-e4a7-405d-9d3a-9c907827d60d"
_PRIORITY_LEVEL = b"378f8bf2-02ac-4caa-94ed-aa36d89165fc"
_INLINE_LIMIT = 2048          # Go's net/http buffers this much before it goes chunked
_LIST_CHUNK = 1 << 20
_LIST_KINDS = {"pods": b"PodList", "nodes": b"NodeList", "namespaces": b"NamespaceList",
               "persistentvolumeclaims": b"PersistentVolumeClaimList"}

_NAME = r"([^/]+)"
_ROUTES = [  # (pattern, handler method name)
    (r"/version/?", "version"),
    (r"/api/?", "api_versions"),
    (r"/api/v1/?", "api_v1"),
    (r"/apis/?", "apis"),
    (r"/(?:healthz|livez|readyz)", "health"),
    (r"/simcluster/v1/(.+)", "control"),
    (r"/api/v1/namespaces", "namespaces"),
    (rf"/api/v1/namespaces/{_NAME}", "namespace"),
    (r"/api/v1/nodes", "nodes"),
    (rf"/api/v1/nodes/{_NAME}", "node"),
    (rf"/api/v1/nodes/{_NAME}/status", "node_status"),
    (r"/api/v1/pods", "all_pods"),
    (rf"/api/v1/namespaces/{_NAME}/pods", "pods"),
    (rf"/api/v1/namespaces/{_NAME}/pods/{_NAME}", "pod"),
    (rf"/api/v1/namespaces/{_NAME}/pods/{_NAME}/status", "pod_status"),
    (rf"/api/v1/namespaces/{_NAME}/pods/{_NAME}/binding", "pod_binding"),
    (rf"/api/v1/namespaces/{_NAME}/bindings", "bindings"),
    (r"/api/v1/persistentvolumeclaims", "all_claims"),
    (rf"/api/v1/namespaces/{_NAME}/persistentvolumeclaims", "claims"),
    (rf"/api/v1/namespaces/{_NAME}/persistentvolumeclaims/{_NAME}", "claim"),
]
_COMPILED = [(re.compile(p + "$"), name) for p, name in _ROUTES]


def _truthy(value) -> bool:
    return str(value).lower() in ("true", "1")


def encode_continue(rv: int, start: str) -> str:
    token = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(token).rstrip(b"=").decode()


def decode_continue(token: str) -> tuple:
    """(rv, start key relative to the list's prefix) from an opaque continue token."""
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        return int(data["rv"]), data["start"].lstrip("/")
    except (ValueError, KeyError, TypeError):
        raise bad_request("continue key is not valid: incorrect encoded start "
                          "resourceVersion (version meta.k8s.io/v1)") from None


class ApiServer(ThreadingHTTPServer):
    """Serves one SimCluster (`ctx`: api, store, watchers, faults, settings, control)."""
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address, ctx):
        self.ctx = ctx
        self.connections: set = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, Handler)

    def close_connections(self) -> None:
        """Cut every open connection (kill): clients see a reset, not a clean end."""
        with self.connections_lock:
            conns = list(self.connections)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ApiServer

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self):
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    # -- framing ---------------------------------------------------------------------

    def _head(self, code: int, length: int | None) -> bytes:
        framing = (b"Content-Length: %d" % length if length is not None
                   else b"Transfer-Encoding: chunked")
        return (b"HTTP/1.1 %d %s\r\nAudit-Id: %s\r\nCache-Control: no-cache, private\r\n"
                b"Content-Type: application/json\r\nX-Kubernetes-Pf-Flowschema-Uid: %s\r\n"
                b"X-Kubernetes-Pf-Prioritylevel-Uid: %s\r\nDate: %s\r\n%s\r\n\r\n"
                % (code, _REASONS.get(code, "Unknown").encode(), str(uuid.uuid4()).encode(),
                   _FLOW_SCHEMA, _PRIORITY_LEVEL, formatdate(usegmt=True).encode(), framing))

    def send_body(self, code: int, body: bytes) -> None:
        if len(body) <= _INLINE_LIMIT:
            self.wfile.write(self._head(code, len(body)) + body)
        else:
            self.wfile.write(self._head(code, None) + b"%x\r\n" % len(body) + body
                             + b"\r\n0\r\n\r\n")

    def send_json(self, code: int, obj) -> None:
        self.send_body(code, orjson.dumps(obj) + b"\n")

    def start_chunked(self, code: int = 200) -> None:
        self.wfile.write(self._head(code, None))

    def send_chunks(self, pieces: list) -> None:
        """Each piece becomes its own chunk; all go out in one write."""
        self.wfile.write(b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces))

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")

    # -- dispatch --------------------------------------------------------------------

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        self.query = dict(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        self.raw_body = self.rfile.read(length) if length else b""
        self.manager = manager_name(self.headers.get("User-Agent"))
        try:
            for pattern, name in _COMPILED:
                m = pattern.match(url.path)
                if m:
                    getattr(self, "h_" + name)(method, *m.groups())
                    return
            raise ApiError(404, "the server could not find the requested resource",
                           "NotFound", {})
        except ApiError as e:
            self.send_body(e.code, e.to_bytes())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:  # a bug here must not kill the connection silently
            self.send_json(500, status_body(500, f"Internal error occurred: {e!r}",
                                            "InternalError"))

    def body(self):
        if not self.raw_body:
            raise bad_request("the body of the request was in an unknown format - accepted "
                              "media types include: application/json, application/yaml, "
                              "application/vnd.kubernetes.protobuf")
        try:
            return orjson.loads(self.raw_body)
        except orjson.JSONDecodeError as e:
            raise bad_request(f"the object provided is unrecognized: {e}") from None

    def int_param(self, name: str, default=None):
        value = self.query.get(name)
        if value in (None, ""):
            return default
        try:
            return int(value)
        except ValueError:
            raise bad_request(f'invalid value for {name}: "{value}"') from None

    def _not_allowed(self, method):
        raise ApiError(405, f"the server does not allow this method on the requested "
                            f"resource ({method})", "MethodNotAllowed", {})

    @property
    def api(self):
        return self.server.ctx.api

    # -- discovery and control -------------------------------------------------------

    def h_version(self, method):
        self.send_body(200, discovery.version_body())

    def h_api_versions(self, method):
        host, port = self.server.server_address[:2]
        self.send_body(200, discovery.api_versions_body(f"{host}:{port}"))

    def h_api_v1(self, method):
        self.send_body(200, discovery.api_v1_body())

    def h_apis(self, method):
        self.send_body(200, discovery.api_groups_body())

    def h_health(self, method):
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         b"Content-Length: 2\r\n\r\nok")

    def h_control(self, method, action):
        body = orjson.loads(self.raw_body) if self.raw_body else {}
        code, reply = self.server.ctx.control(method, action, body)
        self.send_json(code, reply)

    # -- collections -----------------------------------------------------------------

    def h_namespaces(self, method):
        if method == "POST":
            self.send_body(201, self._full("namespaces", self.api.create_namespace(
                self.body(), self.manager)))
        elif method == "GET":
            self._list_or_watch("namespaces", "")
        else:
            self._not_allowed(method)

    def h_nodes(self, method):
        if method == "POST":
            self.send_body(201, self._full("nodes", self.api.create_node(self.body(),
                                                                         self.manager)))
        elif method == "GET":
            self._list_or_watch("nodes", "")
        elif method == "DELETE":
            self._delete_collection("nodes", "")
        else:
            self._not_allowed(method)

    def h_all_pods(self, method):
        if method != "GET":
            self._not_allowed(method)
        self._list_or_watch("pods", "")

    def h_pods(self, method, ns):
        if method == "POST":
            self.send_body(201, self._full("pods", self.api.create_pod(ns, self.body(),
                                                                       self.manager)))
        elif method == "GET":
            self._list_or_watch("pods", ns + "/")
        elif method == "DELETE":
            self._delete_collection("pods", ns + "/")
        else:
            self._not_allowed(method)

    def h_all_claims(self, method):
        if method != "GET":
            self._not_allowed(method)
        self._list_or_watch("persistentvolumeclaims", "")

    def h_claims(self, method, ns):
        if method == "POST":
            self.send_body(201, self._full("persistentvolumeclaims", self.api.create_claim(
                ns, self.body(), self.manager)))
        elif method == "GET":
            self._list_or_watch("persistentvolumeclaims", ns + "/")
        else:
            self._not_allowed(method)

    # -- single objects --------------------------------------------------------------

    def h_namespace(self, method, name):
        if method != "GET":
            self._not_allowed(method)
        self.send_body(200, self._full("namespaces", self.api.get("namespaces", name)))

    def h_node(self, method, name):
        if method == "DELETE":
            self.send_json(200, self.api.delete_node(name, self._delete_options().get(
                "preconditions")))
        else:
            self._object(method, "nodes", name)

    def h_node_status(self, method, name):
        self._object(method, "nodes", name, "status")

    def h_pod(self, method, ns, name):
        if method == "DELETE":
            options = self._delete_options()
            entry = self.api.delete_pod(ns, name, options.get("gracePeriodSeconds"),
                                        options.get("preconditions"))
            self.send_body(200, self._full("pods", entry))
        else:
            self._object(method, "pods", f"{ns}/{name}")

    def h_claim(self, method, ns, name):
        if method == "GET":
            self.server.ctx.faults.before_read("persistentvolumeclaims", "get", ns)
            self.send_body(200, self._full("persistentvolumeclaims", self.api.get(
                "persistentvolumeclaims", f"{ns}/{name}")))
        elif method == "DELETE":
            self.send_body(200, self._full("persistentvolumeclaims",
                                           self.api.delete_claim(ns, name)))
        else:
            self._not_allowed(method)

    def h_pod_status(self, method, ns, name):
        self._object(method, "pods", f"{ns}/{name}", "status")

    def h_pod_binding(self, method, ns, name):
        if method != "POST":
            self._not_allowed(method)
        self._bind(ns, name, self.body(), copy_topology=True)

    def h_bindings(self, method, ns):
        if method != "POST":
            self._not_allowed(method)
        body = self.body()
        self._bind(ns, (body.get("metadata") or {}).get("name", ""), body, copy_topology=False)

    def _bind(self, ns, name, body, copy_topology):
        self.server.ctx.faults.before_bind(ns, name)
        self.api.bind(ns, name, body, copy_topology=copy_topology)
        self.send_json(201, status_body(201, success=True))

    def _object(self, method, resource, key, subresource=None):
        if method in ("PUT", "PATCH") and subresource is None:
            self.server.ctx.faults.before_update(resource, key.rsplit("/", 1)[-1])
        if method == "GET":
            entry = self.api.get(resource, key)
        elif method == "PUT":
            entry = self.api.update(resource, key, self.body(), self.manager, subresource)
        elif method == "PATCH":
            entry = self.api.patch(resource, key, self.headers.get("Content-Type", ""),
                                   self.body(), self.manager, subresource)
        else:
            self._not_allowed(method)
        self.send_body(200, self._full(resource, entry))

    def _full(self, resource, entry) -> bytes:
        return self.api.store.resources[resource].full(entry.raw) + b"\n"

    def _delete_options(self) -> dict:
        options = orjson.loads(self.raw_body) if self.raw_body else {}
        if "gracePeriodSeconds" not in options and "gracePeriodSeconds" in self.query:
            options["gracePeriodSeconds"] = self.int_param("gracePeriodSeconds")
        return options

    # -- list, watch, deletecollection -----------------------------------------------

    def _selectors(self, resource):
        return (parse_label_selector(self.query.get("labelSelector")),
                parse_field_selector(self.query.get("fieldSelector"),
                                     FIELD_SELECTABLE[resource]))

    def _list_or_watch(self, resource, prefix):
        watch = _truthy(self.query.get("watch", ""))
        self.server.ctx.faults.before_read(resource, "watch" if watch else "list",
                                           prefix.rstrip("/"))
        labels, fields = self._selectors(resource)
        if watch:
            self._watch(resource, prefix, labels, fields)
        else:
            self._list(resource, prefix, labels, fields)

    def _list(self, resource, prefix, labels, fields):
        q = self.query
        limit = self.int_param("limit", 0)
        rv, start = None, ""
        if q.get("continue"):
            token_rv, rel = decode_continue(q["continue"])
            rv, start = (None if token_rv < 0 else token_rv), prefix + rel
        elif q.get("resourceVersionMatch") == "Exact":
            rv = self.int_param("resourceVersion", 0)
        unfiltered = labels is None and fields is None
        snap = self.api.store.snapshot(resource, rv, prefix, start,
                                       limit + 1 if limit and unfiltered else None)
        if snap is None:
            if q.get("continue"):
                raise expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter, or use "
                    "the continue token in this response to retrieve the remainder of the "
                    "results. Continuing with the provided token results in an inconsistent "
                    "list - objects that were created, modified, or deleted between the time "
                    "the first chunk was returned and now may show up in the list.",
                    {"continue": encode_continue(-1, start[len(prefix):])})
            raise expired("The resourceVersion for the provided list is too old.")
        list_rv, keys, entries, total = snap
        selected = (range(len(entries)) if unfiltered else
                    [i for i, e in enumerate(entries)
                     if (labels is None or labels(e.labels))
                     and (fields is None or fields(e.fields))])
        meta = {"resourceVersion": str(list_rv)}
        if limit and len(selected) > limit:
            last = selected[limit - 1]
            selected = selected[:limit]
            meta["continue"] = encode_continue(list_rv, "/" + keys[last][len(prefix):] + "\0")
            if unfiltered:
                meta["remainingItemCount"] = total - limit
        self._send_list(resource, meta, [entries[i] for i in selected])

    def _send_list(self, resource, meta: dict, entries: list):
        """Each entry's bytes unpacked as they go out: a list never holds them all. Inline
        while the whole fits in _INLINE_LIMIT, else chunks of about _LIST_CHUNK."""
        head = (b'{"kind":"%s","apiVersion":"v1","metadata":%s,"items":['
                % (_LIST_KINDS[resource], orjson.dumps(meta)))
        pieces, size, chunked = [head], len(head), False
        for i, entry in enumerate(entries):
            raw = entry.raw
            if i:
                pieces.append(b",")
            pieces.append(raw)
            size += len(raw) + 1
            if not chunked and size + 3 > _INLINE_LIMIT:
                self.start_chunked()
                chunked = True
            if chunked and size >= _LIST_CHUNK:
                self.send_chunks([b"".join(pieces)])
                pieces, size = [], 0
        pieces.append(b"]}\n")
        if not chunked:
            self.send_body(200, b"".join(pieces))
            return
        self.send_chunks([b"".join(pieces)])
        self.end_chunked()

    def _watch(self, resource, prefix, labels, fields):
        ctx = self.server.ctx
        timeout = self.int_param("timeoutSeconds") or ctx.settings.watch_timeout
        req = WatchRequest(resource, prefix, labels, fields, self.int_param("resourceVersion", 0),
                           _truthy(self.query.get("allowWatchBookmarks", "")), timeout,
                           _truthy(self.query.get("sendInitialEvents", "")))
        self.start_chunked()

        def send(pieces):
            ctx.faults.hold_while_silent()
            self.send_chunks(pieces)
        clean = serve_watch(self.api.store, ctx.watchers, req, send,
                            ctx.settings.bookmark_interval)
        ctx.faults.hold_while_silent()      # a silent server does not end its streams either
        if clean:
            self.end_chunked()
        else:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass      # the watcher hung up first: the connection is gone already

    def _delete_collection(self, resource, prefix):
        labels, fields = self._selectors(resource)
        grace = self._delete_options().get("gracePeriodSeconds")
        list_rv, keys, entries, _ = self.api.store.snapshot(resource, None, prefix)
        chosen = [i for i, e in enumerate(entries)
                  if (labels is None or labels(e.labels)) and (fields is None or fields(e.fields))]
        if resource == "pods":
            self.api.delete_pods([keys[i] for i in chosen], grace)
        else:
            for i in chosen:
                try:
                    self.api.delete_node(keys[i])
                except ApiError as e:
                    if e.code != 404:
                        raise
        self._send_list(resource, {"resourceVersion": str(list_rv)},
                        [entries[i] for i in chosen])
