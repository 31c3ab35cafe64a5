"""The address policy (conversation.articles.guard), without the network.

The end-to-end refusals (the server sees no request) are in test_articles_service.py.
"""

from __future__ import annotations

import socket
from ipaddress import ip_network

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from conversation.articles.guard import (
    AddressPolicy,
    GuardedResolver,
    StaticResolver,
    block_reason,
    check_url,
)
from conversation.articles.models import ArticleFailure, ArticleStatus

REFUSED = [
    "127.0.0.1",
    "127.255.255.254",
    "0.0.0.0",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # CGNAT
    "100.127.255.254",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.2.10",
    "198.18.0.1",
    "::",
    "::1",
    "fe80::1",
    "fe80::1%eth0",
    "fc00::1",
    "fd00:ec2::254",  # AWS metadata over IPv6
    "ff02::1",
    "fec0::1",
    "2001:db8::1",
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "::ffff:10.0.0.1",
    "::127.0.0.1",  # IPv4-compatible (deprecated)
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo, client 10.0.0.1
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::1",  # local-use NAT64
    "100::1",  # discard
]
ALLOWED = [
    "93.184.215.14",
    "8.8.8.8",
    "1.1.1.1",
    "100.63.255.255",  # just below CGNAT
    "100.128.0.1",  # just above CGNAT
    "172.32.0.1",  # just above 172.16/12
    "2606:4700:4700::1111",
    "2a00:1450:4001:82b::200e",
    "64:ff9b::5db8:d70e",  # NAT64 of a public address (DNS64 networks)
    "2002:5db8:d70e::1",  # 6to4 of a public address
]


@pytest.mark.parametrize("address", REFUSED)
def test_special_addresses_are_refused(address: str) -> None:
    assert block_reason(address) is not None


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address: str) -> None:
    assert block_reason(address) is None


def test_reason_names_the_embedded_address() -> None:
    reason = block_reason("::ffff:169.254.169.254")
    assert reason is not None and "169.254.169.254" in reason and "link-local" in reason


def test_policy_exceptions_open_only_the_listed_network() -> None:
    policy = AddressPolicy(allowed_networks=(ip_network("10.5.0.0/16"),))
    assert policy.refusal("10.5.1.1") is None
    assert policy.refusal("10.6.1.1") is not None
    assert policy.refusal("::ffff:10.5.1.1") is not None  # stricter on purpose
    assert AddressPolicy(allow_private=True).refusal("127.0.0.1") is None


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("ftp://example.com/file", ArticleStatus.INVALID_URL),
        ("file:///etc/passwd", ArticleStatus.INVALID_URL),
        ("https://user:secret@example.com/", ArticleStatus.INVALID_URL),
        ("https://token@example.com/", ArticleStatus.INVALID_URL),
        ("http://127.0.0.1/", ArticleStatus.BLOCKED),
        ("http://[::1]:8080/", ArticleStatus.BLOCKED),
        ("http://[::ffff:127.0.0.1]/", ArticleStatus.BLOCKED),
        ("http://169.254.169.254/latest/meta-data/", ArticleStatus.BLOCKED),
        ("http://2130706433/", ArticleStatus.BLOCKED),  # 127.0.0.1 as one number
        ("http://127.1/", ArticleStatus.BLOCKED),
        ("http://0x7f.0.0.1/", ArticleStatus.BLOCKED),
        ("http://0/", ArticleStatus.BLOCKED),
    ],
)
def test_check_url_refuses(url: str, status: ArticleStatus) -> None:
    with pytest.raises(ArticleFailure) as caught:
        check_url(URL(url), AddressPolicy())
    assert caught.value.status is status


@pytest.mark.parametrize(
    "url", ["https://example.com/a?b=c", "http://93.184.215.14/", "http://news.example:8080/x"]
)
def test_check_url_lets_public_and_named_hosts_through(url: str) -> None:
    check_url(URL(url), AddressPolicy())  # names are checked when resolved, not here


def test_check_url_keeps_scheme_rules_even_when_private_is_allowed() -> None:
    check_url(URL("http://127.0.0.1/"), AddressPolicy(allow_private=True))
    with pytest.raises(ArticleFailure):
        check_url(URL("gopher://127.0.0.1/"), AddressPolicy(allow_private=True))


async def test_resolver_keeps_only_allowed_answers() -> None:
    inner = StaticResolver({"mixed.test": ["10.0.0.7", "93.184.215.14", "::1"]})
    answers = await GuardedResolver(inner, AddressPolicy()).resolve(
        "mixed.test", 443, socket.AF_UNSPEC
    )
    assert [answer["host"] for answer in answers] == ["93.184.215.14"]


async def test_resolver_refuses_a_name_with_only_private_answers() -> None:
    inner = StaticResolver({"Loopy.Test.": ["127.0.0.1", "::1"]})
    with pytest.raises(ArticleFailure) as caught:
        await GuardedResolver(inner, AddressPolicy()).resolve("loopy.test", 80, socket.AF_UNSPEC)
    assert caught.value.status is ArticleStatus.BLOCKED
    assert "127.0.0.1 (loopback)" in caught.value.reason


class _RebindingResolver(AbstractResolver):
    """Answers public first, then private: the DNS-rebinding pattern."""

    def __init__(self) -> None:
        self._answers = ["93.184.215.14", "169.254.169.254"]

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self._answers.pop(0)
        return [
            ResolveResult(
                hostname=host, host=address, port=port, family=socket.AF_INET, proto=0, flags=0
            )
        ]

    async def close(self) -> None:
        return None


async def test_every_resolution_is_checked_not_just_the_first() -> None:
    guarded = GuardedResolver(_RebindingResolver(), AddressPolicy())
    assert (await guarded.resolve("rebind.test", 80))[0]["host"] == "93.184.215.14"
    with pytest.raises(ArticleFailure):
        await guarded.resolve("rebind.test", 80)


async def test_static_resolver_unknown_name_is_a_dns_error() -> None:
    with pytest.raises(socket.gaierror):
        await StaticResolver({}).resolve("nowhere.test", 80)


@pytest.mark.parametrize("url", ["http://127.0.0.1./", "http://169.254.169.254./latest"])
def test_a_trailing_dot_does_not_hide_an_address(url):
    with pytest.raises(ArticleFailure) as failure:
        check_url(URL(url), AddressPolicy())
    assert failure.value.status is ArticleStatus.BLOCKED


def test_a_hostile_charset_does_not_break_decoding():
    from conversation.articles.charset import decode_html

    assert decode_html(b"<p>caf\xc3\xa9</p>", "undefined") == "<p>café</p>"
    assert decode_html(b'<meta charset="undefined"><p>ok</p>', None).endswith("<p>ok</p>")
