"""The studio marks what the bot would answer without being called, at the threshold asked."""

from __future__ import annotations

import json

from tests.bot.studio.test_studio_api import studio
from tests.fakes.harness import BOT_ID, ROOT

FOLLOW_LOG = ROOT / "tests" / "logs" / "follow_up.json"


async def test_the_follow_up_is_marked_with_its_score_and_the_threshold_moves_it():
    messages = json.loads(FOLLOW_LOG.read_text(encoding="utf-8"))["messages"]
    follow_up, lunch = messages[-2]["id"], messages[-1]["id"]
    async with studio(FOLLOW_LOG) as (http, url):
        async with http.post(f"{url}api/follow", json={"threshold": None}) as response:
            assert response.status == 200
            view = await response.json()
        assert view["bot_id"] == str(BOT_ID) and view["threshold"] == view["fitted_threshold"]
        marks = {mark["id"]: mark for mark in view["marks"]}
        assert marks[follow_up]["followed"] and marks[follow_up]["answer"]
        assert marks[follow_up]["why"].startswith("followed: no mention")
        assert not marks[lunch]["answer"] and marks[lunch]["score"] < marks[follow_up]["score"]
        strict = {"threshold": 0.99, "bot": str(BOT_ID)}
        async with http.post(f"{url}api/follow", json=strict) as response:
            marks = {mark["id"]: mark for mark in (await response.json())["marks"]}
        assert not marks[follow_up]["answer"] and marks[follow_up]["score"] is not None


async def test_a_threshold_out_of_range_is_one_line():
    async with (
        studio(FOLLOW_LOG) as (http, url),
        http.post(f"{url}api/follow", json={"threshold": 3}) as response,
    ):
        assert response.status == 400
        assert (await response.json())["error"] == (
            "threshold: a number from 0 to 1, or null (got 3)"
        )


async def test_an_author_who_wrote_nothing_has_no_marks():
    async with (
        studio(FOLLOW_LOG) as (http, url),
        http.post(f"{url}api/follow", json={"bot": "42"}) as response,
    ):
        view = await response.json()
    assert view["bot_id"] is None and view["marks"] == []


async def test_a_threshold_of_zero_is_shown_as_zero_not_as_the_fitted_one():
    """0.0 is a threshold (answer everything), not "unset": shown as asked, whoever plays the
    bot."""
    async with studio(FOLLOW_LOG) as (http, url):
        for bot in (str(BOT_ID), "42"):  # the log's bot, and an author who wrote nothing
            async with http.post(f"{url}api/follow", json={"threshold": 0.0, "bot": bot}) as got:
                view = await got.json()
            assert view["threshold"] == 0.0 != view["fitted_threshold"], bot
