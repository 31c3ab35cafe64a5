"""``/model``: which models there are, which one answers in this channel, and choosing one.

Anyone may read the list (it is the operator's ``[models.NAME]`` tables, without addresses or
keys); only members with Manage Server may choose, since a model costs money or machine time.
A choice holds for the channel and its threads until the next restart or config reload: the
config stays the one source of lasting settings.
"""

from __future__ import annotations

from typing import Any

from bot.answering.channels import ChannelRuntimes
from bot.config.schema import Config
from bot.discord.places import place_of
from conversation.prompt import neutral_name

DEFAULT_CHOICE = "default"
REFUSED = "Only members with the Manage Server permission can choose the model."
SHOWN_NAME_CHARS = 60


def model_choices(config: Config) -> dict[str, str]:
    """What ``/model name`` offers: each named model and ``default`` (none without models)."""
    if not config.models:
        return {}
    return {name: name for name in config.models} | {DEFAULT_CHOICE: DEFAULT_CHOICE}


def shown_choice(name: str) -> str:
    """A name a member typed, as the code span of a one-line answer shows it: one line, at most
    ``SHOWN_NAME_CHARS``, its backticks look-alikes (one would close the span, and what follows
    would render as markdown: a link, a heading, a mention)."""
    flat = neutral_name(name, fallback="")[:SHOWN_NAME_CHARS].replace("`", "\u02cb")
    return flat if len(flat) < SHOWN_NAME_CHARS else flat[:-1] + "\u2026"


def model_command_text(
    channels: ChannelRuntimes, channel: Any, *, may_choose: bool, name: str | None
) -> str:
    """The ephemeral answer to ``/model [name]``, after doing what it says."""
    if channel is None:
        return "I cannot see this channel."
    if name is not None:
        if not may_choose:
            return REFUSED
        name = name.strip()
        known = channels.clients.models
        if name != DEFAULT_CHOICE and name not in known:
            listed = ", ".join(f"`{n}`" for n in known) or "none ([models.NAME] in config.toml)"
            return f"There is no model `{shown_choice(name)}`. The models: {listed}."
        channels.choose(place_of(channel), None if name == DEFAULT_CHOICE else name)
    return _describe(channels, channel, changed=name is not None)


def _describe(channels: ChannelRuntimes, channel: Any, *, changed: bool) -> str:
    runtime = channels.runtime_for(channel)
    model = runtime.config.model
    endpoint = f"`{model.use}` ({model.name})" if model.use else f"`{model.name}`"
    lines = [
        f"{'Now answering' if changed else 'Answering'} here with {endpoint}, "
        f"from {runtime.source}."
    ]
    if runtime.source == "/model":
        lines[0] += " It lasts until the next restart or config reload."
    if getattr(channel, "parent_id", None) is not None:
        lines.append("This thread follows its channel's model.")
    models = channels.clients.models
    if models:
        listed = ", ".join(f"`{name}` ({named.name})" for name, named in models.items())
        lines.append(f"Models: {listed}; `{DEFAULT_CHOICE}` goes back to the config's.")
    else:
        lines.append("No other models are configured ([models.NAME] in config.toml).")
    return "\n".join(lines)
