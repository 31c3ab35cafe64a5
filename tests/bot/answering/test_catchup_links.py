"""The summary's citations made into jump links, and the pages of a long catch-up."""

from __future__ import annotations

from types import SimpleNamespace

from bot.answering.catchup import jump_link, linked_lines, pages

GUILD = SimpleNamespace(id=10)
CHANNEL = SimpleNamespace(id=20)
MESSAGES = [SimpleNamespace(id=30 + n, guild=GUILD, channel=CHANNEL) for n in range(3)]


def test_each_line_links_what_it_cites_and_an_invented_number_links_nowhere():
    text = "- Ben's deploy failed [1]\n\n* Dev patched it [2][3][2]\n- and more [7] [0]\nextra"
    lines, invented = linked_lines(text, MESSAGES, most=3)
    assert lines == [
        f"- Ben's deploy failed [1]({jump_link(MESSAGES[0])})",
        f"- Dev patched it [2]({jump_link(MESSAGES[1])}) [3]({jump_link(MESSAGES[2])})",
        "- and more",
    ]
    assert invented == 2
    assert jump_link(MESSAGES[0]) == "https://discord.com/channels/10/20/30"


def test_a_dm_links_through_me():
    dm = SimpleNamespace(id=5, guild=None, channel=SimpleNamespace(id=6))
    assert jump_link(dm) == "https://discord.com/channels/@me/6/5"


def test_pages_keep_blocks_whole_within_discords_length():
    blocks = ["head", "a" * 1500, "b" * 1500, "\n".join(["c" * 90] * 30)]
    shown = pages(blocks)
    assert all(len(page) <= 2000 for page in shown)
    assert shown[0] == "head\n\n" + "a" * 1500
    assert "".join(shown).replace("\n", "").count("c") == 90 * 30
