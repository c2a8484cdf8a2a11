# koordgang scheduler image.
#
#   docker build -t koordgang:dev .
#
# Needs BuildKit (the default builder since Docker 23) for the RUN --mount below.
#
# The base is pinned to a Python patch release on a fixed Debian release. For a fully
# reproducible build pin the digest as well, e.g.
#   docker build --build-arg PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:<digest> .
# (`docker buildx imagetools inspect python:3.11.14-slim-bookworm` prints the digest).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# --- build: one wheel for koordgang and one for each dependency ------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# Only what the wheel is made of (pyproject names README.md as the long description;
# setup.py and MANIFEST.in leave the unit tests beside the code out, and .dockerignore keeps
# them out of the build context as well).
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY koordgang ./koordgang
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

# --- runtime: a venv holding those wheels, nothing else ----------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="koordgang" \
      org.opencontainers.image.description="Secondary Kubernetes scheduler for gangs of pods" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    HOME=/tmp
# Installed offline from the build stage's wheels; the wheels never enter a layer.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --no-index --find-links=/wheels koordgang \
 && koordgang --help >/dev/null
# An unprivileged user that needs no /etc/passwd entry (the "nonroot" id of distroless).
USER 65532:65532
EXPOSE 10251
ENTRYPOINT ["koordgang"]
CMD ["run"]
