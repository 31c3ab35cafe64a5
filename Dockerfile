# threadwise: python -m bot run, with config and data as volumes.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY conversation ./conversation
RUN pip install . \
    && useradd --create-home --uid 10001 threadwise \
    && mkdir -p /config /data \
    && chown threadwise:threadwise /data
COPY config.toml /config/config.toml
# In the image the store lives on the /data volume.
RUN sed -i 's|^path = "data/threadwise.sqlite3"|path = "/data/threadwise.sqlite3"|' /config/config.toml \
    && grep -q '^path = "/data/threadwise.sqlite3"' /config/config.toml

USER threadwise
# /config holds config.toml (mount your own); /data holds the SQLite store.
VOLUME ["/config", "/data"]
# The token comes from the environment: docker run -e DISCORD_TOKEN=... -e MODEL_API_KEY=...
ENTRYPOINT ["python", "-m", "bot"]
CMD ["run", "--config", "/config/config.toml"]
