"""The extender listener's TLS: our own context on cheroot's builtin adapter, and the
handshake in the connection's worker thread.

kube-scheduler's extender `tlsConfig` can present a client certificate: with a client CA
the listener requires one signed by it, and the certificate's subject names the caller.

cheroot's builtin adapter shakes hands on the server's single thread that accepts
connections and hands kept-alive ones their next request (cherrypy/cheroot#748, open in
11.1.2): a client that connects and says nothing would hold every call up, kube-scheduler's
on its open connection included, for the connection timeout. So the adapter here only
wraps the socket, and the connection shakes hands in the worker thread that then reads
its first request.
"""
import logging
import ssl

from cheroot.ssl.builtin import BuiltinSSLAdapter

log = logging.getLogger(__name__)


def tls_context(cert: str, key: str, client_ca: str = "") -> ssl.SSLContext:
    """The listener's TLS: its certificate, and with `client_ca` a required client
    certificate signed by that CA. Raises OSError / ssl.SSLError for unusable files."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


class ExtenderTLS(BuiltinSSLAdapter):
    """cheroot's builtin adapter with `tls_context`, the ssl_adapter of an HTTPS listener;
    its connections shake hands in their worker (`shake_hands`). Raises OSError /
    ssl.SSLError for unusable files."""

    def __init__(self, cert: str, key: str, client_ca: str = ""):
        super().__init__(cert, key)
        self.context = tls_context(cert, key, client_ca)

    def wrap(self, sock):
        """The socket, to be shaken hands with by its connection (no environ yet)."""
        return self.context.wrap_socket(sock, server_side=True,
                                        do_handshake_on_connect=False), {}

    def shake_hands(self, sock: ssl.SSLSocket, address: str):
        """The handshake, within the socket's timeout: the environ of the connection's
        requests (the client certificate's fields among them), or None (logged)."""
        try:
            sock.do_handshake()
        except OSError as exc:   # ssl.SSLError (no or an unknown certificate), a timeout
            log.warning("extender TLS handshake with %s failed: %s", address, exc)
            return None
        return self.get_environ(sock)
