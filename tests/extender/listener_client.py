"""kube-scheduler's side of the owner's listener in the tests: a kept-alive HTTP/1.1
connection posting the extender's JSON, and raw bytes for requests no client would send."""
import http.client
import socket

import orjson


def connect(listener):
    host, port = listener.server_address[:2]
    return http.client.HTTPConnection(host, port, timeout=10)


def post(connection, verb, body, prefix="/extender/"):
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    connection.request("POST", prefix + verb, body=raw,
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, orjson.loads(response.read())


def raw_exchange(listener, request: bytes) -> bytes:
    """Send raw bytes, read until the listener closes the connection."""
    with socket.create_connection(listener.server_address[:2], timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)
