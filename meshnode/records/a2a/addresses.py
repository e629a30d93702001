"""How the A2A face groups client addresses: one host (an IPv6 address by its /64, as one host has
a whole /64 to rotate through), one subnet (an IPv4 /24, an IPv6 /48), and the targets of a block."""

from __future__ import annotations

import ipaddress

SUBNET_V4, SUBNET_V6 = 24, 48


def ip_of(address: str):
    """The address as an ``ipaddress`` object (an IPv4-mapped IPv6 address as its IPv4), None when it is none."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    return ip.ipv4_mapped if ip.version == 6 and ip.ipv4_mapped is not None else ip


def host_of(address: str) -> str:
    """The rate limit's and the held queue's key for one address: an IPv6 address by its /64, any
    other as it is (a name that is no address: itself)."""
    ip = ip_of(address)
    if ip is None:
        return address
    return str(ip) if ip.version == 4 else str(ipaddress.ip_network(f"{ip}/64", strict=False))


def subnet_of(address: str) -> str:
    """The subnet an address is counted in: its /24 (IPv4) or /48 (IPv6)."""
    ip = ip_of(address)
    if ip is None:
        return address
    bits = SUBNET_V4 if ip.version == 4 else SUBNET_V6
    return str(ipaddress.ip_network(f"{ip}/{bits}", strict=False))


def network_of(text: str):
    """The network an address or CIDR the person typed names (None: it is not one); an address is
    its own /32 or /128."""
    try:
        net = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return None
    if net.version == 6 and net.network_address.ipv4_mapped is not None and net.prefixlen >= 96:
        return ipaddress.ip_network(f"{net.network_address.ipv4_mapped}/{net.prefixlen - 96}")
    return net


def within(address: str, net) -> bool:
    ip = ip_of(address)
    return ip is not None and ip.version == net.version and ip in net
