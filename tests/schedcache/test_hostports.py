"""Host ports of a NodeInfo (HostPortInfo): empty ip means 0.0.0.0, empty protocol TCP,
0.0.0.0 conflicts with every ip on the same protocol and port."""

import pytest

from schedcache import Cache

import tests.schedcache.builders as b

N1 = "node-1"


def used_ports(*ports_per_pod):
    """The used_ports of a node holding one pod per entry (each a list of ports)."""
    cache = Cache(ttl=0)
    cache.add_node(b.node(N1))
    for i, ports in enumerate(ports_per_pod):
        cache.add_pod(b.pod("p%d" % i, N1, cpu="10m", ports=ports))
    return cache.dump().nodes[N1].used_ports


# id, ports used (ip, protocol, port; None = left out of the JSON), probe (ip, protocol, port), conflict?
CONFLICT_CASES = [
    ("same ip/proto/port", [("127.0.0.1", "TCP", 80)], ("127.0.0.1", "TCP", 80), True),
    ("other port", [("127.0.0.1", "TCP", 80)], ("127.0.0.1", "TCP", 81), False),
    ("other ip", [("127.0.0.1", "TCP", 80)], ("127.0.0.2", "TCP", 80), False),
    ("other protocol", [("127.0.0.1", "TCP", 80)], ("127.0.0.1", "UDP", 80), False),
    ("probe 0.0.0.0 hits a specific ip", [("127.0.0.1", "TCP", 80)], ("0.0.0.0", "TCP", 80), True),
    ("probe empty ip hits a specific ip", [("127.0.0.1", "TCP", 80)], ("", "TCP", 80), True),
    ("probe empty protocol means TCP", [("127.0.0.1", "TCP", 80)], ("127.0.0.1", "", 80), True),
    ("probe empty protocol is not UDP", [("127.0.0.1", "UDP", 80)], ("127.0.0.1", "", 80), False),
    ("used 0.0.0.0 hits every ip", [("0.0.0.0", "TCP", 80)], ("10.1.2.3", "TCP", 80), True),
    ("used 0.0.0.0 other protocol", [("0.0.0.0", "TCP", 80)], ("10.1.2.3", "UDP", 80), False),
    ("used empty ip means 0.0.0.0", [(None, "TCP", 80)], ("192.168.0.9", "TCP", 80), True),
    ("used empty protocol means TCP", [("127.0.0.1", None, 80)], ("127.0.0.1", "TCP", 80), True),
    ("used empty protocol is not UDP", [("127.0.0.1", None, 80)], ("127.0.0.1", "UDP", 80), False),
    ("used empty ip and protocol", [(None, None, 8080)], ("10.0.0.1", "", 8080), True),
    ("used empty ip and protocol, probe UDP", [(None, None, 8080)], ("10.0.0.1", "UDP", 8080), False),
    ("explicit empty strings in the pod", [("", "", 8080)], ("10.0.0.1", "TCP", 8080), True),
    ("UDP on UDP", [("127.0.0.1", "UDP", 53)], ("", "UDP", 53), True),
    ("SCTP", [("127.0.0.1", "SCTP", 9)], ("127.0.0.1", "SCTP", 9), True),
    ("nothing used", [], ("0.0.0.0", "TCP", 80), False),
    ("port 0 never conflicts", [("0.0.0.0", "TCP", 80)], ("0.0.0.0", "TCP", 0), False),
]


@pytest.mark.parametrize("used,probe,want", [t[1:] for t in CONFLICT_CASES], ids=[t[0] for t in CONFLICT_CASES])
def test_check_conflict(used, probe, want):
    up = used_ports([b.port(port, ip=ip, protocol=proto) for ip, proto, port in used])
    assert bool(up.check_conflict(*probe)) is want


def test_container_port_without_host_port_is_not_used():
    up = used_ports([b.port(None, container_port=80), b.port(0, container_port=81)])
    assert len(up) == 0
    assert not up.check_conflict("0.0.0.0", "TCP", 80)


def test_len_counts_ip_protocol_port_entries():
    up = used_ports(
        [b.port(80, "127.0.0.1", "TCP"), b.port(80, "127.0.0.1", "UDP")],
        [b.port(80, "0.0.0.0", "TCP"), b.port(8080)],
    )
    assert len(up) == 4


def test_duplicates_are_one_entry():
    up = used_ports([b.port(80), b.port(80, "0.0.0.0", "TCP")], [b.port(80, "", "")])
    assert len(up) == 1


def test_ports_of_all_containers_count():
    cache = Cache(ttl=0)
    p = b.pod(
        "p",
        N1,
        containers=[b.container("a", ports=[b.port(81)]), b.container("b", ports=[b.port(82, "10.0.0.1", "UDP")])],
    )
    cache.add_pod(p)
    up = cache.dump().nodes[N1].used_ports
    assert len(up) == 2
    assert up.check_conflict("", "", 81)
    assert up.check_conflict("10.0.0.1", "UDP", 82)
    assert not up.check_conflict("10.0.0.2", "UDP", 82)


def test_ports_freed_when_pod_goes():
    cache = Cache(ttl=10)
    p = b.pod("p", N1, ports=[b.port(80, "127.0.0.1", "TCP")])
    q = b.pod("q", N1, ports=[b.port(8080)])
    cache.add_pod(p)
    cache.assume_pod(q)
    up = cache.dump().nodes[N1].used_ports
    assert len(up) == 2
    cache.remove_pod(p)
    up = cache.dump().nodes[N1].used_ports
    assert len(up) == 1
    assert not up.check_conflict("127.0.0.1", "TCP", 80)
    assert up.check_conflict("127.0.0.1", "TCP", 8080)
    cache.forget_pod(q)
    assert N1 not in cache.dump().nodes


def test_ports_follow_pod_update():
    cache = Cache(ttl=0)
    p = b.pod("p", N1, ports=[b.port(80, "127.0.0.1", "TCP")])
    q = b.new_version(p)
    q["spec"]["containers"][0]["ports"] = [b.port(8080, "127.0.0.1", "TCP")]
    cache.add_pod(p)
    cache.update_pod(p, q)
    up = cache.dump().nodes[N1].used_ports
    assert len(up) == 1
    assert not up.check_conflict("127.0.0.1", "TCP", 80)
    assert up.check_conflict("127.0.0.1", "TCP", 8080)
