"""Recognising the bot's notices: only whole lines at the end of its message, as it posts them."""

from __future__ import annotations

from conversation.prompt.notices import BotNotices

NOTICES = BotNotices(
    [
        "The model is busy right now, try again in a minute.",
        "*(Cut here: too long for {count} messages.)*",
        "(The model gave an empty answer.)",
        "I can't read this channel's history, so I only saw your message.",
    ]
)


def test_a_message_that_is_only_a_notice():
    assert NOTICES.only_notice("*The model is busy right now, try again in a minute.*")
    assert NOTICES.only_notice("(The model gave an empty answer.)")
    assert not NOTICES.only_notice("Use hard links.")
    assert not NOTICES.only_notice("")


def test_notices_ending_an_answer_are_stripped():
    note = "*(I can't read this channel's history, so I only saw your message.)*"
    answer = f"Use hard links.\n\n{note}"
    assert NOTICES.without_notices(answer) == "Use hard links."
    cut = "a long answer\n*(Cut here: too long for 5 messages.)*"
    assert NOTICES.without_notices(cut) == "a long answer"


def test_the_same_words_inside_an_answer_stay():
    quoted = "It said:\nThe model is busy right now, try again in a minute.\nSo I waited."
    assert NOTICES.without_notices(quoted) == quoted
    assert NOTICES.without_notices("plain text\n") == "plain text\n"
    busy = "*The model is busy right now, try again in a minute.*"
    assert BotNotices([]).without_notices(busy) == busy  # none known: nothing taken
