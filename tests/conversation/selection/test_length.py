"""A channel's cap grows with what its own builds asked for, bounded, and says why."""

from __future__ import annotations

from conversation.selection.length import ConversationLengths


def test_a_channel_keeps_max_total_until_it_has_evidence():
    lengths = ConversationLengths(min_builds=10)
    for _ in range(9):
        lengths.record(1, 200)
    assert lengths.cap(1, 50, 120).total == 50
    lengths.record(1, 200)
    assert lengths.cap(1, 50, 120).total == 120


def test_the_cap_follows_the_longer_builds_within_its_bounds():
    lengths = ConversationLengths(min_builds=10, quantile=0.9)
    for asked in [10] * 80 + [70] * 20:  # the longest fifth asked for 70
        lengths.record(7, asked)
    cap = lengths.cap(7, 50, 120)
    assert cap.total == 70
    assert cap.why is not None and "20%" in cap.why and "more than 50" in cap.why
    assert lengths.cap(7, 50, 60).total == 60  # never past max_total_long
    assert lengths.cap(8, 50, 120).total == 50  # another channel has its own evidence


def test_a_channel_of_short_conversations_keeps_max_total():
    lengths = ConversationLengths(min_builds=10)
    for asked in [10] * 95 + [200] * 5:  # a few long ones: the tenth longest still fits
        lengths.record(1, asked)
    assert lengths.cap(1, 50, 120).total == 50
    assert lengths.cap(1, 50, 120).why is None


def test_max_total_long_at_max_total_is_one_cap_everywhere():
    lengths = ConversationLengths(min_builds=1)
    lengths.record(1, 500)
    assert lengths.cap(1, 50, 50).total == 50
    assert lengths.cap(1, 50, 40).total == 50


def test_only_the_last_builds_count():
    lengths = ConversationLengths(builds=20, min_builds=10)
    for _ in range(20):
        lengths.record(1, 300)
    for _ in range(20):
        lengths.record(1, 5)  # the channel's conversations became short
    assert lengths.cap(1, 50, 120).total == 50


async def test_the_builder_grows_a_long_channels_cap_and_says_why():
    """A busy channel whose earlier builds asked for more than max_total: the next context may
    hold more, and its work log tells the cap with its evidence; another channel's do not."""
    from conversation.common.settings import ContextSettings
    from conversation.replay.dce import parse_export
    from conversation.replay.log_source import LogSource
    from conversation.selection.builder import ContextBuilder
    from conversation.sources.cache import ChannelCache
    from conversation.sources.reader import ChannelReader
    from tests.fakes.synthetic import busy_channel

    source = LogSource(parse_export(busy_channel(seed=3, messages=400)))
    trigger = source.messages[350]

    async def build(builder: ContextBuilder):
        reader = ChannelReader(source, ChannelCache(source.channel_id))
        return await builder.build(trigger, reader)

    settings = ContextSettings(max_total=5, max_total_long=40)
    short = ContextBuilder(settings)
    plain = await build(short)
    assert len(plain.messages) <= 5
    assert not [e for e in plain.work_log if e.action == "context_cap"]
    long = ContextBuilder(settings)
    for _ in range(20):
        long.lengths.record(source.channel_id, 30)
    grown = await build(long)
    caps = [e.detail for e in grown.work_log if e.action == "context_cap"]
    assert caps and caps[0].startswith("cap 30: 100% of this channel's last 20 contexts")
    assert len(grown.messages) > len(plain.messages)
    assert set(plain.ids) <= set(grown.ids)
    assert len(grown.messages) <= 30


def test_the_cap_adapts_by_default_but_an_operators_own_cap_stays():
    """Unset, max_total_long lets the default cap of 50 grow to 120; a max_total the operator
    chose (the studio's 2, a support channel's 12) stays unless they set max_total_long too."""
    from conversation.common.settings import ContextSettings

    assert ContextSettings().longest_total == 120
    assert ContextSettings(max_total=50).longest_total == 120  # config.toml writes the default
    assert ContextSettings(max_total=2).longest_total == 2
    assert ContextSettings(max_total=12).longest_total == 12
    assert ContextSettings(max_total=12, max_total_long=30).longest_total == 30
    assert ContextSettings(max_total_long=50).longest_total == 50  # one cap everywhere
    lengths = ConversationLengths(min_builds=10)
    for _ in range(10):
        lengths.record(1, 300)
    small = ContextSettings(max_total=2)
    assert lengths.cap(1, small.max_total, small.longest_total).total == 2
    grown = ContextSettings()
    assert lengths.cap(1, grown.max_total, grown.longest_total).total == 120


async def test_under_the_plain_score_the_default_cap_does_not_grow():
    """Without the meaning extra the plain score decides, and its threshold was fitted for one
    cap: unset, max_total_long leaves the default cap where it is (irc-dev's Ubuntu logs lost
    over 0.01 F1 when it grew); set by the operator, it is honoured."""
    from conversation.common.settings import ContextSettings
    from conversation.replay.dce import parse_export
    from conversation.replay.log_source import LogSource
    from conversation.selection.builder import ContextBuilder
    from conversation.sources.cache import ChannelCache
    from conversation.sources.reader import ChannelReader
    from tests.fakes.synthetic import busy_channel

    source = LogSource(parse_export(busy_channel(seed=3, messages=400)))
    trigger = source.messages[350]

    async def caps(settings: ContextSettings) -> list[str]:
        builder = ContextBuilder(settings)
        assert builder.meaning_model is None  # the plain score, as in the default install
        for _ in range(20):
            builder.lengths.record(source.channel_id, 300)
        reader = ChannelReader(source, ChannelCache(source.channel_id))
        selection = await builder.build(trigger, reader)
        return [e.detail for e in selection.work_log if e.action == "context_cap"]

    assert await caps(ContextSettings()) == []
    (grown,) = await caps(ContextSettings(max_total_long=120))
    assert grown.startswith("cap 120:")


async def test_a_build_the_plain_score_decides_keeps_max_total_though_meaning_is_loaded():
    """The cap grows for the score that reads meaning; a build it cannot decide (the trigger
    not embedded yet: a page read from Discord) is the plain score's, at the plain cap. The
    same channel with the operator's own max_total_long grows for either."""
    from conversation.common.settings import ContextSettings
    from conversation.replay.dce import parse_export
    from conversation.replay.log_source import LogSource
    from conversation.selection.builder import ContextBuilder
    from conversation.selection.weights import load_meaning_model
    from conversation.sources.cache import ChannelCache
    from conversation.sources.reader import ChannelReader
    from tests.fakes.synthetic import busy_channel

    source = LogSource(parse_export(busy_channel(seed=3, messages=600)))
    trigger = source.messages[500]

    async def size(settings: ContextSettings) -> int:
        # Meanings not known yet: the plain score decides every build.
        builder = ContextBuilder(settings, meanings=lambda m: None)
        builder.meaning_model = builder.meaning_model or load_meaning_model()
        assert builder.meaning_model is not None
        for _ in range(20):
            builder.lengths.record(source.channel_id, 300)
        reader = ChannelReader(source, ChannelCache(source.channel_id))
        return len((await builder.build(trigger, reader)).messages)

    low = {"relevance_threshold": 0.05}  # many candidates reach it: the cap is what binds
    assert await size(ContextSettings(**low)) <= 50
    assert await size(ContextSettings(max_total_long=120, **low)) > 50
