"""The client's address: the peer's, or what trusted proxies forwarded, read from the right."""
import ipaddress
import logging

import pytest
from django.test import RequestFactory

from dashboard.web import client_address as module
from dashboard.web.client_address import client_address, forwarded_client

PROXIES = [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8"),
           ipaddress.ip_network("192.0.2.1/32")]


@pytest.mark.parametrize("peer, forwarded_for, client", [
    ("203.0.113.7", "", "203.0.113.7"),                              # no proxy
    ("203.0.113.7", "198.51.100.1", "203.0.113.7"),                  # forged, not a proxy
    ("10.1.2.3", "", "10.1.2.3"),                                    # a proxy's own request
    ("10.1.2.3", "203.0.113.7", "203.0.113.7"),                      # through the ingress
    ("10.1.2.3", "198.51.100.1, 203.0.113.7", "203.0.113.7"),        # the client's words left
    ("10.1.2.3", "198.51.100.1,203.0.113.7, 10.9.9.9", "203.0.113.7"),   # two proxies
    ("10.1.2.3", "198.51.100.1, 192.0.2.1", "198.51.100.1"),         # a trusted single address
    ("10.1.2.3", "10.5.5.5, 10.6.6.6", "10.5.5.5"),                  # proxies all the way
    ("10.1.2.3", "203.0.113.7, unknown", "10.1.2.3"),                # not an address: stop
    ("10.1.2.3", "203.0.113.7:5555", "10.1.2.3"),
    ("10.1.2.3", "2001:db8::5", "2001:db8::5"),
    ("fd00::1", "::ffff:203.0.113.7", "203.0.113.7"),                # IPv4 in IPv6
    ("::ffff:10.1.2.3", "203.0.113.7", "203.0.113.7"),
    ("", "203.0.113.7", ""),                                         # no peer: as it was
])
def test_the_client_is_the_first_address_from_the_right_not_a_trusted_proxy(
        peer, forwarded_for, client):
    assert forwarded_client(peer, forwarded_for, PROXIES) == client


def test_without_trusted_proxies_the_header_is_never_read():
    assert forwarded_client("10.1.2.3", "203.0.113.7", []) == "10.1.2.3"


def test_a_header_from_an_untrusted_peer_is_reported_once(settings, caplog, monkeypatch):
    monkeypatch.setattr(module, "_warned", [])
    settings.SCHEDVIEW_TRUSTED_PROXIES = PROXIES
    factory = RequestFactory()
    with caplog.at_level(logging.WARNING, logger=module.__name__):
        for peer in ("10.1.2.3", "172.16.0.9", "172.16.0.9"):
            request = factory.get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR="203.0.113.7")
            client_address(request)
    assert [r.getMessage()[:31] for r in caplog.records] == ["X-Forwarded-For from 172.16.0.9"]
