# syntax=docker/dockerfile:1
# One recipe for every onceflow binary; pick it with the build arg CMD, e.g.
#   docker build --build-arg CMD=./services/ingest/cmd/ingest -t onceflow-ingest .
# CMD is any main package of the module: ./services/<svc>/cmd/<svc>,
# ./sandbox/cmd/psp, ./sandbox/cmd/fiscal, ./db/cmd/migrate.
# The binary is /app in every image (docker-compose.yml's healthchecks run /app healthcheck).

FROM golang:1.26 AS build
ARG CMD
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    test -n "$CMD" || { echo "set --build-arg CMD=./path/to/cmd" >&2; exit 1; }; \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/app "$CMD"

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/app /app
USER nonroot
ENTRYPOINT ["/app"]
