# Multi-stage build of the agent: a static binary on a minimal, non-root
# runtime image. Build with: docker build --build-arg VERSION=$(git describe --always) .
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
COPY --from=builder /out/api-syncagent /usr/local/bin/api-syncagent
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/api-syncagent"]
