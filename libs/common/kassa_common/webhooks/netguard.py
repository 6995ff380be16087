"""Which webhook destinations are allowed, and the one address a delivery connects to.

Only globally routable addresses are allowed unless the operator allows private URLs:
``ipaddress``'s ``is_global`` (which already leaves out private, loopback, link-local,
unspecified and most special-purpose ranges) plus an explicit list of what it lets
through or what hides an internal address inside a public-looking one (CGNAT, the IETF
protocol block, benchmarking, multicast, reserved, IPv4-mapped/translated/6to4/Teredo
IPv6, cloud metadata).

``resolve_destination`` resolves a host once and returns the address that was checked:
the sender connects to exactly that address (the URL's name stays in ``Host`` and in
TLS SNI), so a DNS answer that changes between the check and the connection (DNS
rebinding) never reaches an internal address.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

LOCAL_NAMES = {"localhost", "localhost.localdomain"}
NOT_PUBLIC = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
]
METADATA = {ipaddress.ip_address("100.100.100.200"), ipaddress.ip_address("fd00:ec2::254")}
NAT64 = ipaddress.ip_network("64:ff9b::/96")

Resolver = Callable[[str, int], list[str]]


class DestinationRefused(ValueError):
    """The destination may not be delivered to; the message never names what it resolved to."""


def _embedded_v4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if addr.ipv4_mapped:
        return addr.ipv4_mapped
    if addr.sixtofour:
        return addr.sixtofour
    if addr.teredo:
        return addr.teredo[1]
    if addr in NAT64:
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


def is_public_ip(ip: str) -> bool:
    """True only for a globally routable unicast address (and what it embeds, for IPv6)."""
    addr = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address):
        inner = _embedded_v4(addr)
        if inner is not None and not is_public_ip(str(inner)):
            return False
    if addr in METADATA or addr.is_multicast or addr.is_reserved or not addr.is_global:
        return False
    return not any(addr.version == net.version and addr in net for net in NOT_PUBLIC)


def is_private_ip(ip: str) -> bool:
    return not is_public_ip(ip)


def host_is_private_literal(host: str) -> bool:
    """True for a host that is private without resolving (an IP literal or localhost)."""
    host = host.strip("[]").lower()
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        return is_private_ip(host)
    except ValueError:
        return False


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    return [str(info[4][0]) for info in infos]


def resolve_destination(
    host: str, port: int, *, allow_private: bool = False, resolver: Resolver = system_resolver
) -> str:
    """The one address to connect to for ``host``, resolved once; ``DestinationRefused``
    when it cannot be resolved or any of its addresses is not public (unless allowed)."""
    host = host.strip("[]")
    try:
        addresses = list(dict.fromkeys(resolver(host, port)))
    except (OSError, UnicodeError):
        raise DestinationRefused(f"cannot resolve {host}") from None
    if not addresses:
        raise DestinationRefused(f"cannot resolve {host}")
    if not allow_private and (host.lower() in LOCAL_NAMES or not all(is_public_ip(a) for a in addresses)):
        raise DestinationRefused("not a public address")
    return addresses[0]
