"""Finding the links of a message (conversation.articles.urls)."""

from __future__ import annotations

from conversation.articles.urls import dedupe, find_urls, links_in, message_links, url_key


def test_links_keep_order_and_drop_sentence_punctuation() -> None:
    content = (
        "read https://example.com/a, then (see https://example.org/b). "
        "Also <https://example.net/c> and **https://example.com/d**!"
    )
    assert links_in(content) == [
        "https://example.com/a",
        "https://example.org/b",
        "https://example.net/c",
        "https://example.com/d",
    ]


def test_brackets_the_link_opened_are_kept() -> None:
    content = "see https://en.wikipedia.org/wiki/Python_(programming_language) and [x](https://a.example/p)"
    assert links_in(content) == [
        "https://en.wikipedia.org/wiki/Python_(programming_language)",
        "https://a.example/p",
    ]


def test_links_in_code_are_examples_not_reading() -> None:
    content = "try `curl https://api.example/x` or\n```\nGET https://api.example/y\n```\nbut read https://blog.example/z"
    assert links_in(content) == ["https://blog.example/z"]


def test_only_http_schemes_are_links() -> None:
    assert links_in("ftp://files.example/x javascript:alert(1) file:///etc/passwd") == []
    assert links_in("HTTPS://EXAMPLE.COM/Up") == ["HTTPS://EXAMPLE.COM/Up"]


def test_url_key_ignores_fragment_and_host_case() -> None:
    assert url_key("https://Example.COM/a#top") == url_key("https://example.com/a")
    assert url_key("https://example.com/a?x=1") != url_key("https://example.com/a?x=2")
    assert url_key("https://example.com/Path") != url_key("https://example.com/path")


def test_dedupe_keeps_first_spelling() -> None:
    assert dedupe(["https://a.example/x#one", "https://A.example/x", "https://b.example/"]) == [
        "https://a.example/x#one",
        "https://b.example/",
    ]


def test_embeds_follow_content_and_merge_with_it() -> None:
    links = message_links(
        "look https://news.example/story",
        ["https://news.example/story", "https://video.example/v?id=1", "not a url", "ftp://x/y"],
    )
    assert links == ["https://news.example/story", "https://video.example/v?id=1"]


def test_find_urls_caps_per_message() -> None:
    content = " ".join(f"https://site{i}.example/" for i in range(6))
    assert find_urls(content, [], limit=3) == [f"https://site{i}.example/" for i in range(3)]
    assert find_urls(content, [], limit=0) == []
