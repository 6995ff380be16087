"""Which webhook destinations are allowed: loopback, private, link-local and metadata
addresses are refused unless the operator allows private URLs."""
from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

LOCAL_NAMES = {"localhost", "localhost.localdomain"}


def is_private_ip(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    return (addr.is_private or addr.is_loopback or addr.is_link_local or addr.is_multicast
            or addr.is_reserved or addr.is_unspecified or str(addr) in {"100.100.100.200", "fd00:ec2::254"})


def host_is_private_literal(host: str) -> bool:
    """True for a host that is private without resolving (an IP literal or localhost)."""
    host = host.strip("[]").lower()
    if host in LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        return is_private_ip(host)
    except ValueError:
        return False


def resolve_public(url: str) -> list[str]:
    """Resolve the URL's host; raise ValueError if any address it resolves to is private."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise ValueError(f"cannot resolve {host}: {exc}") from None
    addresses = sorted({info[4][0] for info in infos})
    private = [a for a in addresses if is_private_ip(a)]
    if private:
        raise ValueError(f"{host} resolves to a non-public address ({private[0]}); deliveries there are refused")
    return addresses
