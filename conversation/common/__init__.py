"""What every other package of ``conversation`` shares; imports nothing of the project.

Modules: ``settings`` (the pydantic settings of the builder and the prompt, the articles, the
message cache and following, which ``bot.config.schema`` composes into ``config.toml``),
``text`` (text from outside made encodable: lone surrogates and NUL replaced), ``compat`` (every
private or undocumented dependency API the package uses, fenced in one place and checked by
``tests/test_compat.py``).

A change goes here when a setting is added, or when a dependency's private name moves.
"""

from conversation.common.settings import (
    ArticleSettings,
    CacheSettings,
    ContextSettings,
    FollowSettings,
    Snowflake,
    StrictSection,
)
from conversation.common.text import ZERO_WIDTH_SPACE, clean_json, clean_text, defuse_mass_mentions

__all__ = [
    "ZERO_WIDTH_SPACE",
    "ArticleSettings",
    "CacheSettings",
    "ContextSettings",
    "FollowSettings",
    "Snowflake",
    "StrictSection",
    "clean_json",
    "clean_text",
    "defuse_mass_mentions",
]
