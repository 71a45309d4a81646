"""Which network addresses plugin code may reach: one classification for the loader and covel.http.

Plain Python (no Django): the manifest loader refuses an origin it can already tell is not
public, and the HTTP client refuses every resolved address that is not, with the same rules.

An IPv6 address that carries an IPv4 address counts as the IPv4 address it carries, so
`::127.0.0.1` is loopback, not "global IPv6". The forms that carry one (RFC 6052, 4291, 3056,
4380, 8215): IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, IPv4-compatible
`::a.b.c.d`, NAT64 well-known `64:ff9b::/96` and local-use `64:ff9b:1::/48`, 6to4 `2002::/16`
and Teredo `2001::/32` (whose client address is stored inverted).

A host name in an origin may also spell an IPv4 address the way inet_aton reads it (`127.1`,
`2130706433`, `0x7f.1`, `0177.0.0.1`): curl and many resolvers still take those, so they are
classified by the address they spell; `localhost` and names under `.localhost` (RFC 6761) are
loopback by definition.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries, or None when it carries none."""
    value = int(ip)
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client, where the packets end up
    if ip in _TRANSLATED or ip in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _COMPATIBLE:
        # :: and ::1 are IPv6's own unspecified and loopback addresses, not IPv4 ones.
        return None if value <= 1 else ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _NAT64_LOCAL:
        # RFC 6052 with a /48 prefix: the address sits in bytes 6, 7, 9 and 10 (byte 8 is zero).
        octets = ip.packed
        return ipaddress.IPv4Address(bytes([octets[6], octets[7], octets[9], octets[10]]))
    return None


def is_public_ip(ip: IPAddress) -> bool:
    """Global unicast; an IPv6 address with an IPv4 one inside is judged by the one inside."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is not None:
            return is_public_ip(inner)
    return ip.is_global and not ip.is_multicast


def is_public_address(address: str) -> bool:
    """is_public_ip for a resolver's answer ("::1", "fe80::1%eth0", "93.184.216.34")."""
    return is_public_ip(ipaddress.ip_address(address.split("%", 1)[0]))


def _inet_aton_part(text: str) -> int | None:
    try:
        if text.lower().startswith("0x"):
            return int(text[2:] or "0", 16)
        if len(text) > 1 and text.startswith("0"):
            return int(text, 8)
        return int(text, 10)
    except ValueError:
        return None


def legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a host name spells in inet_aton's forms (a, a.b, a.b.c, a.b.c.d with
    decimal, octal or hex parts), or None when it is not one."""
    parts = host.split(".")
    if host.endswith("."):
        parts = parts[:-1]
    if not 1 <= len(parts) <= 4 or not all(parts):
        return None
    numbers = [_inet_aton_part(p) for p in parts]
    if any(n is None or n < 0 for n in numbers):
        return None
    *leading, last = numbers
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(parts)):  # type: ignore[operator]
        return None
    value = 0
    for n in leading:
        value = value * 256 + n  # type: ignore[operator]
    value = value * 256 ** (5 - len(parts)) + last  # type: ignore[operator]
    return ipaddress.IPv4Address(value)


def host_address(host: str) -> IPAddress | None:
    """The address a URL's host names literally ("[::1]", "127.1", "2130706433"), else None."""
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return legacy_ipv4(text)


def host_is_loopback_name(host: str) -> bool:
    """localhost and every name under .localhost (RFC 6761 keeps them on the machine itself)."""
    text = host.strip().lower().rstrip(".")
    return text == "localhost" or text.endswith(".localhost")
