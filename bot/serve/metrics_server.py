"""``[metrics] port``: the Prometheus text of ``bot.answering.metrics`` served over HTTP.

aiohttp on the bot's own event loop: no thread, nothing left running once the client closes.
"""

from __future__ import annotations

import logging

from aiohttp import web

from bot.answering.metrics import Metrics
from bot.config.schema import MetricsSettings

log = logging.getLogger(__name__)


class MetricsServer:
    """``GET /metrics`` on the event loop (aiohttp): no thread, stopped with the bot."""

    def __init__(self, metrics: Metrics, settings: MetricsSettings) -> None:
        self.metrics = metrics
        self.settings = settings
        self._runner: web.AppRunner | None = None
        self.port: int | None = None

    async def start(self) -> None:
        async def scrape(request: web.Request) -> web.Response:
            body, content_type = self.metrics.render()
            mime, _, params = content_type.partition(";")
            charset = params.split("charset=")[-1].strip() if "charset=" in params else None
            return web.Response(body=body, content_type=mime.strip(), charset=charset)

        app = web.Application()
        app.router.add_get("/metrics", scrape)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.settings.host, self.settings.port)
        try:
            await site.start()
        except OSError as error:  # a taken port is no reason to stop answering
            await runner.cleanup()
            log.error(
                "metrics: cannot listen on %s:%s ([metrics] host, port): %s; no metrics served",
                self.settings.host,
                self.settings.port,
                error.strerror or error,
            )
            return
        self._runner = runner
        self.port = runner.addresses[0][1]  # the real one when port = 0
        log.info("metrics: http://%s:%s/metrics", self.settings.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
