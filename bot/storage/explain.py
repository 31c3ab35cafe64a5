"""Why an answer was what it was: building an :class:`Explanation` and rendering it as text.

The text has to fit places of very different size (a terminal, Discord's 2000-character
ephemeral reply), so it is built from lines in order of importance and, under a limit, the
less important lines are dropped with a note saying how many, never cut mid-word silently.
"""

from __future__ import annotations

from collections import Counter

from bot.storage import reads
from bot.storage.dialect import Db
from bot.storage.errors import StoreError
from bot.storage.models import ContextEntry, ExplainedMessage, Explanation, WorkLogEntry
from bot.storage.nodes import excerpt
from conversation.memory import SUMMARY_REASON, parsed_summary


def build(conn: Db, message_id: int) -> Explanation:
    seq = reads.find_seq(conn, message_id)
    if seq is None:
        raise not_in_store(message_id)
    row = reads.interaction_row(conn, seq)
    pairs = reads.context_rows(conn, seq)
    states = reads.states_since(
        conn,
        [e.message_id for _, e in pairs if e is not None and e.message_id is not None],
        row["started_at"],
    )
    context = [
        ExplainedMessage(
            position=position,
            role=str(message.get("role", "?")),
            message_id=entry.message_id if entry else None,
            author_id=entry.author_id if entry else None,
            name=entry.name if entry else None,
            reasons=list(entry.reasons) if entry else [],
            excerpt=_excerpt(message, entry),
            state=states.get(entry.message_id) if entry and entry.message_id else None,
            tokens=entry.tokens if entry else None,
        )
        for position, (message, entry) in enumerate(pairs)
    ]
    log = reads.work_log(conn, seq)
    return Explanation(
        interaction_id=row["id"],
        **reads.header_fields(row),
        context=context,
        articles=reads.articles(conn, seq),
        answer_message_ids=reads.answer_ids(conn, seq),
        work_log=log,
        work_log_summary=summarize(log),
        removed=bool(row["removed"]),
    )


def _excerpt(message: dict, entry: ContextEntry | None) -> str:
    """A message's preview; a summary's says first how many messages it stands for, and when
    they were said (its header would fill the preview)."""
    summary = None
    if entry is not None and entry.message_id is None and entry.reasons == [SUMMARY_REASON]:
        summary = parsed_summary(str(message.get("content", "")))
    if summary is None:
        return excerpt(message)
    return f"{summary.describe()}: {excerpt({'content': summary.text})}"


def not_in_store(message_id: int) -> StoreError:
    """The one way of saying "no such answer", also used for answers the asker may not see."""
    return StoreError(
        f"message {message_id} is neither the trigger nor part of an answer in the store"
    )


def summarize(log: list[WorkLogEntry]) -> list[str]:
    """One line per action, e.g. ``history_page: 2 (1 failed), 100 items``, in first-seen order."""
    order: list[str] = []
    runs: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    items: Counter[str] = Counter()
    for entry in log:
        if entry.action not in runs:
            order.append(entry.action)
        runs[entry.action] += 1
        if entry.status == "failure":
            failed[entry.action] += 1
        if entry.count is not None:
            items[entry.action] += entry.count
    lines = []
    for action in order:
        line = f"{action}: {runs[action]}"
        if failed[action]:
            line += f" ({failed[action]} failed)"
        if action in items:
            line += f", {items[action]} items"
        lines.append(line)
    return lines


LINKED_TEXT_HIDDEN = "(a linked message: its text is shown by `python -m bot explain` only)"


def without_linked_text(explanation: Explanation) -> Explanation:
    """The explanation with the text of messages brought in through Discord message links
    left out.

    A link may bring in a message from another channel, which the person asking in Discord may
    not be allowed to read; the store does not keep which channel each message came from, so
    every linked message's text stays out of what is shown in Discord.
    """
    context = [
        m.model_copy(update={"excerpt": LINKED_TEXT_HIDDEN})
        if any(reason.startswith("link") for reason in m.reasons)
        else m
        for m in explanation.context
    ]
    return explanation.model_copy(update={"context": context})


def render_text(explanation: Explanation, limit: int | None = None) -> str:
    """Compact text; with ``limit`` (2000 for Discord) it is guaranteed to fit."""
    e = explanation
    head = [
        f"Answer to message {e.trigger_message_id} by user {e.trigger_author_id} "
        f"in channel {e.channel_id}",
        f"{e.started_at:%Y-%m-%d %H:%M:%S} UTC · {e.model} · {e.outcome}"
        + (f" · {e.latency_seconds:.1f}s" if e.latency_seconds is not None else "")
        + (
            f" · tokens {e.usage.get('prompt_tokens', '?')}+"
            f"{e.usage.get('completion_tokens', '?')}={e.usage.get('total_tokens', '?')}"
            + cached_note(e.usage)
            if e.usage
            else ""
        ),
    ]
    # Answered without a mention: why comes first (see conversation.selection.follower).
    head.extend(entry.detail for entry in e.work_log if entry.action == "followed")
    if e.error:
        head.append(f"Error: {one_line(e.error, 300)}")
    if e.removed:
        head.append("Content removed at the user's request.")
    budget = [entry.detail for entry in e.work_log if entry.action == "budget"]
    if budget:
        head.append(f"Token budget: {budget[-1]}")
    body = _body(e, excerpt_chars=None)
    text = "\n".join(head + body)
    if limit is None or len(text) <= limit:
        return text
    # Too long for Discord: shorter previews first, so every message still gets its line.
    for chars in (50, 30):
        body = _body(e, excerpt_chars=chars)
        text = "\n".join(head + body)
        if len(text) <= limit:
            return text
    return _fit(head, body, limit)


def cached_note(usage: dict[str, int]) -> str:
    """`` (800 of the prompt's tokens from the server's prompt cache)``, when it said so."""
    cached = usage.get("cached_prompt_tokens")
    if cached is None:
        return ""
    return f" ({cached} of the prompt's tokens from the server's prompt cache)"


def _body(e: Explanation, excerpt_chars: int | None) -> list[str]:
    body: list[str] = []
    # Why the context is only part of the channel, before the list it explains.
    body.extend(
        f"Only part of the channel: {entry.detail}"
        for entry in e.work_log
        if entry.action == "history_restricted"
    )
    # A channel whose conversations run long got a higher cap: how many, and the evidence.
    body.extend(
        f"Longer context: {entry.detail}" for entry in e.work_log if entry.action == "context_cap"
    )
    # First: a linked message left out matters to the asker more than the list below.
    links = [entry.detail for entry in e.work_log if entry.action == "link_followed"]
    if links:
        body.append("Message links:")
        body.extend(f"- {link}" for link in links)
    if e.context:
        body.append(f"Context ({len(e.context)} messages sent):")
        for m in e.context:
            who = m.name or (f"user {m.author_id}" if m.author_id else m.role)
            where = f" [{m.message_id}]" if m.message_id else ""
            state = f" ({m.state} since)" if m.state and m.state != "active" else ""
            why = f" — {'; '.join(m.reasons)}" if m.reasons else ""
            if m.message_id is None and m.reasons == [SUMMARY_REASON]:
                who, why = "summary", ""  # its preview says of how many messages, and when
            tokens = f" (~{m.tokens} tokens)" if m.tokens is not None else ""
            preview = m.excerpt
            if excerpt_chars is not None and len(preview) > excerpt_chars:
                preview = preview[: excerpt_chars - 1] + "…"
            body.append(f"{m.position:>2}. {who}{where}{state}{why}{tokens}: {preview}")
    cuts = [entry.detail for entry in e.work_log if entry.action == "budget_cut"]
    if cuts:
        body.append("Cut to fit the token budget:")
        body.extend(f"- {cut}" for cut in cuts)
    if e.articles:
        body.append("Articles:")
        for a in e.articles:
            body.append(f"- {a.url}: {a.status}" + (f" ({a.reason})" if a.reason else ""))
    if e.work_log_summary:
        body.append("Work log: " + "; ".join(e.work_log_summary))
    return body


def _fit(head: list[str], body: list[str], limit: int) -> str:
    kept = list(head)
    for index, line in enumerate(body):
        left = len(body) - index
        note = (
            f"… {left} more line{'s' if left != 1 else ''} not shown (see `python -m bot explain`)"
        )
        candidate = "\n".join([*kept, line])
        if len(candidate) + 1 + len(note) > limit and index < len(body) - 1:
            return _clip("\n".join([*kept, note]), limit)
        if len(candidate) > limit:
            return _clip("\n".join([*kept, note]), limit)
        kept.append(line)
    return _clip("\n".join(kept), limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, its runs of white space one space, cut to ``limit`` with "…"."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
