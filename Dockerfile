# threadwise: every command of `python -m bot` (default: `run`), reading /config/config.toml and
# keeping its store on the /data volume. Build: docker build -t threadwise .
FROM python:3.12-slim

# THREADWISE_CONFIG: every command reads this file unless given --config; mount yours over it.
# THREADWISE_DATA_DIR: a relative [storage] path (the repository's config.toml has one) is
# relative to the /data volume, not to the read-only /config.
# THREADWISE_HEALTH_FILE: the heartbeat the HEALTHCHECK reads.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    THREADWISE_CONFIG=/config/config.toml \
    THREADWISE_DATA_DIR=/data \
    THREADWISE_HEALTH_FILE=/tmp/threadwise-health

WORKDIR /app

# Dependencies first, at the pinned versions, from files that change rarely: this layer is
# reused across code changes.
COPY constraints.txt ./
RUN pip install --no-deps -r constraints.txt

# The code, without reinstalling anything else; `pip check` fails the build if a dependency
# added to pyproject.toml is missing from constraints.txt.
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY conversation ./conversation
RUN pip install --no-deps . && pip check

# The bundled example, so that `docker run --rm threadwise replay --no-model
# examples/support-channel.json` works as in the README.
COPY examples ./examples

# The default config is generated from the code's defaults (never copied from the build
# context, where a token may sit in config.toml): no secret is ever baked into the image.
RUN useradd --create-home --uid 10001 threadwise \
    && mkdir -p /config /data \
    && THREADWISE_CONFIG= python -m bot check-config > /config/config.toml \
    && chown threadwise:threadwise /data

USER threadwise
# The SQLite store lives here; keep it on a named volume.
VOLUME ["/data"]
# The bot rewrites its heartbeat file while connected to Discord.
HEALTHCHECK --interval=60s --timeout=10s --start-period=60s --retries=3 \
    CMD ["python", "-m", "bot.serve.health"]
# Exec form: python is PID 1 and gets docker stop's SIGTERM itself, which stops it in about a
# second (in-flight answers recorded, store closed). The token comes from the environment:
# docker run -e DISCORD_TOKEN=... -e MODEL_API_KEY=...
ENTRYPOINT ["python", "-m", "bot"]
CMD ["run"]
