"""kube-scheduler's side of the owner's listener in the tests: a kept-alive HTTP/1.1
connection posting the extender's JSON, and raw bytes for requests no client would send."""
import http.client
import socket

import orjson

# A second request on a raw connection: answered (404) only if the connection was kept.
_PROBE = b"POST /extender/probe HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"


def connect(listener):
    host, port = listener.address
    return http.client.HTTPConnection(host, port, timeout=10)


def post(connection, verb, body, prefix="/extender/"):
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    connection.request("POST", prefix + verb, body=raw,
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, orjson.loads(response.read())


def raw_exchange(listener, request: bytes):
    """Send raw bytes: (the answer, its body, whether the listener kept the connection),
    the last found by asking again on the same connection."""
    with socket.create_connection(listener.address, timeout=10) as sock:
        sock.sendall(request)
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        body = answer.read()
        try:
            sock.sendall(_PROBE)
            probe = http.client.HTTPResponse(sock)
            probe.begin()
            kept = probe.status == 404
        except ConnectionError:   # http.client.RemoteDisconnected included
            kept = False
    return answer, body, kept
