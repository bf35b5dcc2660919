# Multi-stage build of the agent for people with a container engine
# (make image-docker). make image builds the same image without one
# (hack/image): same user, entrypoint and labels (hack/image's
# TestDockerfileIsEquivalent checks).
#   docker build --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(git log -1 --format=%cI) .
FROM golang:1.26 AS builder
WORKDIR /src
COPY go.mod go.sum ./
COPY sdk/go.mod sdk/go.sum ./sdk/
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/kcp-syncagent/api-syncagent/internal/version.Version=${VERSION}" \
      -o /out/api-syncagent ./cmd/api-syncagent

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.title=api-syncagent \
      org.opencontainers.image.source=https://github.com/kcp-syncagent/api-syncagent \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.revision=${REVISION} \
      org.opencontainers.image.created=${CREATED}
COPY --from=builder /out/api-syncagent /usr/local/bin/api-syncagent
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/api-syncagent"]
