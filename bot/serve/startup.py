"""What ``run`` says when it starts: which config, store, model and endpoint; the invite URL.

A new operator's first questions are "which file did it read?", "where does it keep things?",
"is my model reachable?" and "how do I add it to my server?": each gets one log line. The model
is probed once at start-up, so a wrong ``base_url`` shows before the first member asks, but a
model still loading never stops the bot from starting.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import nextcord

from bot.config.channels import top_level
from bot.config.model_settings import ModelSettings
from bot.config.report import anywhere, trigger_fact
from bot.config.schema import Config, ConfigSource

log = logging.getLogger(__name__)

PROBE_TIMEOUT_SECONDS = 5.0
ANTHROPIC_VERSION = "2023-06-01"

INVITE_PERMISSIONS = nextcord.Permissions(
    view_channel=True,
    send_messages=True,
    send_messages_in_threads=True,
    read_message_history=True,
    use_slash_commands=True,
)
"""What the bot needs: read the channel and its history, answer there and in threads, /context."""


def configure_logging(config: Config) -> None:
    logging.basicConfig(
        level=config.logging.level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # A text bot never joins voice: nextcord's "PyNaCl is not installed" warning is noise.
    nextcord.VoiceClient.warn_nacl = False


def log_configuration(config: Config, source: ConfigSource) -> None:
    storage = config.storage
    days = storage.retention_days
    kept = "kept forever" if days == 0 else f"kept {days} days"
    log.info("config: %s", source.describe())
    log.info("%s", trigger_fact(config))
    log.info("store: %s (interactions %s, [storage] retention_days)", storage.location, kept)
    model = top_level(config).model  # [model] use resolved to its endpoint
    log.info("model: %s at %s", model.name, model.base_url)
    if config.models:
        named = ", ".join(f"{name} ({m.name})" for name, m in config.models.items())
        log.info("named models ([models.NAME], /model): %s", named)
    if config.channels:
        log.info("channel settings: %d [[channels]] table(s)", len(config.channels))


def invite_permissions(config: Config | None = None) -> nextcord.Permissions:
    """What the bot needs, with what its settings add: threads to move conversations into,
    reactions for the status, files for the tools' images."""
    permissions = nextcord.Permissions(INVITE_PERMISSIONS.value)
    if config is not None:
        if anywhere(config, lambda c: c.threads.enabled):
            permissions.create_public_threads = True
        if anywhere(config, lambda c: c.status.reactions):
            permissions.add_reactions = True
        if anywhere(config, lambda c: c.tools.enabled and c.tools.max_images_per_answer > 0):
            permissions.attach_files = True
    return permissions


def invite_url(application_id: int, config: Config | None = None) -> str:
    return nextcord.utils.oauth_url(
        application_id,
        permissions=invite_permissions(config),
        scopes=("bot", "applications.commands"),
    )


async def model_problem(settings: ModelSettings) -> str | None:
    """Why the model endpoint will not answer as configured, or None when it looks right.

    Asks ``GET /models`` (Anthropic: ``/v1/models``), which costs no tokens: no answer, a
    refused key, a server error, a 404 (most often a ``base_url`` without its ``/v1``) or a
    list that lacks ``[model] name`` are worth a line before the first member asks.
    """
    url, headers = _models_request(settings)
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_SECONDS)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(url, headers=headers) as response,
        ):
            if response.status in (401, 403):
                return f"it refused the API key (HTTP {response.status}; [model] api_key)"
            if response.status == 404 and settings.provider == "openai":
                return f"HTTP 404 at {url}; does [model] base_url end in /v1?"
            if response.status >= 400:
                return f"it answered HTTP {response.status}"
            listed = _model_ids(await response.json(content_type=None))
    except TimeoutError:
        return f"no answer within {PROBE_TIMEOUT_SECONDS:.0f} s"
    except aiohttp.ClientError as error:
        return f"{type(error).__name__}: {str(error)[:160]}"
    except ValueError:  # not JSON: a server without a model list, which is allowed
        return None
    # Ollama lists "llama3.1:latest" for "llama3.1"; Anthropic's list is paged and has no
    # aliases, so only an OpenAI-compatible list is held against the name.
    known = {settings.name, f"{settings.name}:latest"}
    if listed and settings.provider == "openai" and not known & set(listed):
        shown = ", ".join(repr(name) for name in listed[:5]) + (", ..." if len(listed) > 5 else "")
        return f"it does not list the model {settings.name!r} ([model] name; it lists {shown})"
    return None


def _model_ids(payload: object) -> list[str]:
    """The ids of an OpenAI or Anthropic model list (``{"data": [{"id": ...}]}``); [] if none."""
    data = payload.get("data") if isinstance(payload, dict) else None
    items = data if isinstance(data, list) else []
    return [str(item["id"]) for item in items if isinstance(item, dict) and "id" in item]


def _models_request(settings: ModelSettings) -> tuple[str, dict[str, str]]:
    """The model list's address and the headers the provider expects (its key included)."""
    headers = {name: value.get_secret_value() for name, value in settings.extra_headers.items()}
    key = settings.api_key.get_secret_value() if settings.api_key is not None else None
    if settings.provider == "anthropic":
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if key:
            headers["x-api-key"] = key
        return f"{settings.base_url}/v1/models", headers
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return f"{settings.base_url}/models", headers


async def warn_if_model_silent(settings: ModelSettings) -> None:
    problem = await model_problem(settings)
    if problem is not None:
        log.warning(
            "model %s at %s does not answer as configured (%s); starting anyway, answers may "
            "fail until it does ([model] base_url, name)",
            settings.name,
            settings.base_url,
            problem,
        )


def start_model_probe(settings: ModelSettings) -> asyncio.Task[None]:
    return asyncio.create_task(warn_if_model_silent(settings), name="model probe")
