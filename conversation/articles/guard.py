"""The address policy: which destinations the article fetcher may connect to (SSRF guard).

Any member can post any URL, and the bot fetches it from inside the operator's network, so a
link to ``http://169.254.169.254/`` (cloud metadata), ``http://localhost:8080/admin`` or a name
that resolves to ``10.0.0.5`` must never be connected to. Checking the hostname is not enough:
the check has to apply to the address actually connected to, or DNS rebinding (a public answer
at check time, a private one at connect time) slips through. So the policy lives in the
resolver aiohttp's connector uses: the connector can only connect to what ``GuardedResolver``
returns. Literal IP hosts never reach a resolver, so ``check_url`` covers those, and it runs on
every redirect hop.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from conversation.articles.models import ArticleFailure, ArticleStatus
from conversation.common.settings import ArticleSettings

# IANA special-purpose registries, written out rather than trusting ``ipaddress``'s flags alone:
# those flags changed between patch releases (3.11.10, 3.12.4), and CGNAT is not "private".
_V4_REFUSED: tuple[tuple[IPv4Network, str], ...] = tuple(
    (IPv4Network(net), reason)
    for net, reason in (
        ("0.0.0.0/8", "unspecified / 'this network'"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared address space (CGNAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (cloud metadata lives here)"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    )
)
_V6_REFUSED: tuple[tuple[IPv6Network, str], ...] = tuple(
    (IPv6Network(net), reason)
    for net, reason in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("2001:2::/48", "benchmarking"),
        ("2001:10::/28", "ORCHID"),
        ("2001:20::/28", "ORCHIDv2"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "segment routing"),
        ("fc00::/7", "unique local (private)"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_V6_GLOBAL_UNICAST = IPv6Network("2000::/3")
_NAT64 = IPv6Network("64:ff9b::/96")


def _v4_reason(ip: IPv4Address) -> str | None:
    for net, reason in _V4_REFUSED:
        if ip in net:
            return reason
    if ip.is_private or ip.is_reserved or ip.is_loopback or ip.is_link_local or ip.is_multicast:
        return "not globally routable"
    return None


def _embedded_v4(ip: IPv6Address) -> list[tuple[str, IPv4Address]]:
    """IPv4 addresses an IPv6 address leads to: a mapped or translated v6 address reaches the
    v4 host, so it is only as acceptable as that host."""
    found: list[tuple[str, IPv4Address]] = []
    if ip.ipv4_mapped is not None:
        found.append(("IPv4-mapped", ip.ipv4_mapped))
    if ip.sixtofour is not None:
        found.append(("6to4", ip.sixtofour))
    if ip.teredo is not None:
        server, client = ip.teredo
        found += [("Teredo server", server), ("Teredo client", client)]
    if ip in _NAT64:
        found.append(("NAT64", IPv4Address(int(ip) & 0xFFFFFFFF)))
    return found


def block_reason(address: str | IPv4Address | IPv6Address) -> str | None:
    """Why the fetcher must not connect to ``address``, or None if it is a public address."""
    try:
        ip = ip_address(address.split("%", 1)[0]) if isinstance(address, str) else address
    except ValueError:
        return f"not an IP address: {address!r}"
    if isinstance(ip, IPv4Address):
        return _v4_reason(ip)
    for label, v4 in _embedded_v4(ip):
        inner = _v4_reason(v4)
        if inner is not None:
            return f"{label} address of {v4}, {inner}"
    if ip in _NAT64:
        return None  # a DNS64 answer for a public v4 host
    for net, reason in _V6_REFUSED:
        if ip in net:
            return reason
    if ip not in _V6_GLOBAL_UNICAST:
        return "not a global unicast address"
    if ip.is_private or ip.is_reserved or ip.is_multicast or ip.is_link_local:
        return "not globally routable"
    return None


def _literal_ip(host: str) -> IPv4Address | IPv6Address | None:
    """The address a host string denotes by itself, including the legacy IPv4 spellings
    (``2130706433``, ``127.1``, ``0x7f.0.0.1``) that the C resolver still accepts."""
    try:
        return ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        pass
    try:
        return IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses may be connected to: public ones, plus the operator's exceptions."""

    allow_private: bool = False
    allowed_networks: tuple[IPv4Network | IPv6Network, ...] = ()

    @classmethod
    def from_settings(cls, settings: ArticleSettings) -> AddressPolicy:
        return cls(settings.allow_private_networks, tuple(settings.allowed_networks))

    def refusal(self, address: str | IPv4Address | IPv6Address) -> str | None:
        """Why ``address`` is refused, or None when it may be connected to."""
        if self.allow_private:
            return None
        if self.allowed_networks:
            try:
                ip = ip_address(address.split("%", 1)[0]) if isinstance(address, str) else address
            except ValueError:
                return f"not an IP address: {address!r}"
            if any(ip.version == net.version and ip in net for net in self.allowed_networks):
                return None
        return block_reason(address)


def check_url(url: URL, policy: AddressPolicy) -> None:
    """Refuse what no address check can fix: other schemes, credentials, and literal addresses
    outside the policy. Runs on the first URL and on every redirect target."""
    if url.scheme not in ("http", "https"):
        raise ArticleFailure(ArticleStatus.INVALID_URL, f"scheme {url.scheme!r} is not http(s)")
    if url.user is not None or url.password is not None:
        raise ArticleFailure(ArticleStatus.INVALID_URL, "credentials in a URL are not allowed")
    if not url.host:
        raise ArticleFailure(ArticleStatus.INVALID_URL, "the URL has no host")
    # A trailing dot is still the same address to some resolvers (and to aiohttp, which then
    # skips resolving it): judge the host without it.
    literal = _literal_ip(url.host.rstrip("."))
    if literal is not None and (reason := policy.refusal(literal)) is not None:
        raise ArticleFailure(ArticleStatus.BLOCKED, f"address {literal} is refused: {reason}")


class GuardedResolver(AbstractResolver):
    """Wraps a resolver and keeps only the addresses the policy allows: the connector connects
    only to addresses this returns, so the address checked is the address connected to."""

    def __init__(self, inner: AbstractResolver, policy: AddressPolicy) -> None:
        self._inner = inner
        self._policy = policy

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = await self._inner.resolve(host, port, family)
        allowed: list[ResolveResult] = []
        refused: list[str] = []
        for answer in answers:
            reason = self._policy.refusal(answer["host"])
            if reason is None:
                allowed.append(answer)
            else:
                refused.append(f"{answer['host']} ({reason})")
        if not allowed:
            raise ArticleFailure(
                ArticleStatus.BLOCKED,
                f"{host} resolves only to refused addresses: " + ", ".join(refused),
            )
        return allowed

    async def close(self) -> None:
        await self._inner.close()


class StaticResolver(AbstractResolver):
    """Answers from a fixed mapping hostname -> addresses, for tests and for operators who pin
    names; it goes through ``GuardedResolver`` like the real one."""

    def __init__(self, table: Mapping[str, Sequence[str]]) -> None:
        self._table = {
            name.lower().rstrip("."): list(addresses) for name, addresses in table.items()
        }

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        families = {
            address: socket.AF_INET6 if ip_address(address).version == 6 else socket.AF_INET
            for address in self._table.get(host.lower().rstrip("."), [])
        }
        wanted = [a for a, f in families.items() if family in (socket.AF_UNSPEC, f)]
        if not wanted:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} is not in the static table")
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=families[address],
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in wanted
        ]

    async def close(self) -> None:
        return None
