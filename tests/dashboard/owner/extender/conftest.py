"""Fixtures for the extender tests: the core's world (no Django setup, no network), and
the certificates of the listener's TLS."""
import pytest

from tests.dashboard.owner.extender.extender_builders import World


@pytest.fixture
def world():
    """A fresh cache, DefaultAlgorithm, statuses, bind recorder and Extender."""
    return World()


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    """A CA, the listener's certificate (for 127.0.0.1) and kube-scheduler's client
    certificate, made with the openssl command."""
    import subprocess
    d = tmp_path_factory.mktemp("pki")

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
            "-keyout", "ca.key", "-out", "ca.pem")
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, subject in (("server", "/CN=schedview-extender"), ("client", "/CN=kube-scheduler"),
                          ("stranger", "/CN=stranger")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                "-keyout", f"{name}.key", "-out", f"{name}.csr")
        ca = ("ca.pem", "ca.key") if name != "stranger" else ("self.pem", "self.key")
        if name == "stranger":   # signed by a CA of its own, not ours
            openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=other-ca", "-keyout", "self.key", "-out", "self.pem")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", ca[0], "-CAkey", ca[1],
                "-CAcreateserial", "-days", "2", "-out", f"{name}.pem",
                *(["-extfile", "server.ext"] if name == "server" else []))
    return d
