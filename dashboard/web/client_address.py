"""Who is calling the web: the client's address, as the login limits count it.

The peer (REMOTE_ADDR: the other end of daphne's socket) is the client, unless it is one
of SCHEDVIEW_TRUSTED_PROXIES. Then X-Forwarded-For says whom it forwarded for. Each
entry of that header was added by the hop to its right, so it is read from the right and
only as far as the hops are trusted proxies: the first address that is not one is the
client. Whatever a client wrote into the header itself lies further left and is never
read, so a guesser cannot rotate addresses by naming them.
"""
import ipaddress
import logging

from django.conf import settings

log = logging.getLogger(__name__)

_warned = []   # one warning per process: a forwarded header from an untrusted peer


def _parse(text: str):
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    return getattr(address, "ipv4_mapped", None) or address


def _trusted(address, proxies) -> bool:
    return address is not None and any(address in network for network in proxies)


def forwarded_client(peer: str, forwarded_for: str, proxies) -> str:
    """The client's address: `peer` (REMOTE_ADDR), or as the trusted `proxies` (networks)
    in front of it forwarded it in `forwarded_for` (the X-Forwarded-For header, "" if
    none). An entry that is not an address ends the walk at the hop that passed it on."""
    client = _parse(peer)
    if client is None:
        return peer
    entries = forwarded_for.split(",") if forwarded_for else []
    while entries and _trusted(client, proxies):
        hop = _parse(entries.pop())
        if hop is None:
            break
        client = hop
    return str(client)


def client_address(request) -> str:
    """django-axes' AXES_CLIENT_IP_CALLABLE: the request's client address."""
    peer = request.META.get("REMOTE_ADDR", "")
    forwarded_for = request.META.get("HTTP_X_FORWARDED_FOR", "")
    proxies = settings.SCHEDVIEW_TRUSTED_PROXIES
    if forwarded_for and not _warned and not _trusted(_parse(peer), proxies):
        _warned.append(peer)
        log.warning("X-Forwarded-For from %s, which is not in SCHEDVIEW_TRUSTED_PROXIES: "
                    "logins are counted by the peer's address (if it is your ingress, every "
                    "user shares its limits: name it there)", peer)
    return forwarded_client(peer, forwarded_for, proxies)
