"""``check-config --probe``: is each model endpoint and MCP server reachable as configured?

A config can be valid and still not answer: a ``base_url`` pointing at a stopped server, a
refused key, an MCP command that exits at once. The probe asks each endpoint once, as the bot's
start-up does (``GET /models``, which costs no tokens), so the exit status tells a deployment
script whether the bot would answer, before it is started.
"""

from __future__ import annotations

import asyncio

from bot.config.channels import top_level
from bot.config.model_settings import ModelSettings
from bot.config.named_models import model_with
from bot.config.schema import Config
from bot.serve.startup import model_problem


def model_endpoints(config: Config) -> list[tuple[str, ModelSettings]]:
    """Each endpoint the bot may answer with: ``[model]`` (its ``use`` resolved) and every
    ``[models.NAME]``, which a channel table or ``/model`` may choose."""
    endpoints = [("[model]", top_level(config).model)]
    for name, named in config.models.items():
        endpoints.append((f"[models.{name}]", model_with(config.model, {}, named)))
    return endpoints


async def _probe_models(config: Config) -> list[tuple[str, ModelSettings, str | None]]:
    endpoints = model_endpoints(config)
    problems = await asyncio.gather(*(model_problem(model) for _, model in endpoints))
    return [
        (where, model, problem) for (where, model), problem in zip(endpoints, problems, strict=True)
    ]


def probe_lines(config: Config, servers_down: list[str]) -> tuple[list[str], bool]:
    """The probe's lines, as TOML comments like the rest of the printout, and whether every
    endpoint and server is up (``servers_down``: the MCP servers check-config found down)."""
    results = asyncio.run(_probe_models(config))
    lines = ["# probe: each model endpoint asked once (GET /models)"]
    for where, model, problem in results:
        state = "up" if problem is None else f"DOWN: {problem}"
        lines.append(f"#   {where} {model.name} at {model.base_url}: {state}")
    lines.extend(f"#   MCP {name}: DOWN (see its line above)" for name in servers_down)
    all_up = all(problem is None for *_, problem in results) and not servers_down
    lines.append("# probe: all up" if all_up else "# probe: something is down (exit status 1)")
    return lines, all_up
