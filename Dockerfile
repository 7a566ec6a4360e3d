# The stepgraph fleet runner: `stepgraph fleet run --image <this image>` runs it as one Job per
# node; each pod runs `stepgraph fleet node` (the catalog with the live target and the pod's
# in-cluster service-account config) and prints its results at the end of its log.
#
#   docker build -t <registry>/stepgraph-runner:<tag> .
#   stepgraph fleet run --nodes power-test/node=target --image <registry>/stepgraph-runner:<tag>
#
# The catalog and manifests are inside the image at /app (the paths `fleet run` passes are
# relative to it). No GPU libraries are needed: every NVML/DCGM reading is taken by exec into
# the agent or hostengine pod.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY dsl/ dsl/
COPY steps/ steps/
COPY targets/ targets/
COPY twin/ twin/
COPY scenarios/ scenarios/
COPY examples/ examples/
COPY docs/design/ docs/design/
RUN pip install --no-cache-dir . \
    && useradd --uid 10001 --no-create-home stepgraph
USER 10001
ENV PYTHONUNBUFFERED=1
ENTRYPOINT ["stepgraph"]
CMD ["fleet", "node"]
