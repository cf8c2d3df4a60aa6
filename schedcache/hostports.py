"""Host ports in use on a node, with the 0.0.0.0 wildcard conflict rule."""

BIND_ALL_IP = "0.0.0.0"
DEFAULT_PROTOCOL = "TCP"


def sanitize(ip, protocol):
    """An empty ip means every address, an empty protocol TCP (as in pod specs)."""
    return ip or BIND_ALL_IP, protocol or DEFAULT_PROTOCOL


class HostPortInfo:
    """(ip, protocol, port) entries in use, counted so that removing one pod's
    port leaves another pod's identical claim in place."""

    __slots__ = ("_by_port",)

    def __init__(self):
        self._by_port = {}  # (protocol, port) -> {ip: count}

    def copy(self) -> "HostPortInfo":
        clone = HostPortInfo()
        clone._by_port = {key: dict(ips) for key, ips in self._by_port.items()}
        return clone

    def add(self, ip, protocol, port):
        ip, protocol = sanitize(ip, protocol)
        ips = self._by_port.setdefault((protocol, port), {})
        ips[ip] = ips.get(ip, 0) + 1

    def remove(self, ip, protocol, port):
        ip, protocol = sanitize(ip, protocol)
        ips = self._by_port.get((protocol, port))
        if not ips or ip not in ips:
            return
        if ips[ip] > 1:
            ips[ip] -= 1
        else:
            del ips[ip]
            if not ips:
                del self._by_port[(protocol, port)]

    def check_conflict(self, ip, protocol, port) -> bool:
        """Would a new claim of (ip, protocol, port) collide with one in use?"""
        if not port or port <= 0:
            return False
        ip, protocol = sanitize(ip, protocol)
        ips = self._by_port.get((protocol, port))
        if not ips:
            return False
        return ip == BIND_ALL_IP or ip in ips or BIND_ALL_IP in ips

    def entries(self) -> list:
        """Sorted (ip, protocol, port) triples, for views and comparisons."""
        return sorted((ip, protocol, port) for (protocol, port), ips in self._by_port.items() for ip in ips)

    def __len__(self):
        return sum(len(ips) for ips in self._by_port.values())

    def __eq__(self, other):
        return isinstance(other, HostPortInfo) and self._by_port == other._by_port

    __hash__ = None

    def __repr__(self):
        return f"HostPortInfo({self.entries()})"
