# Build: a static binary, built with the same command as `make build` (GO_BUILD_MANAGER in the
# Makefile). hack/build's test keeps the two in step, and checks that every package the manager
# imports is copied below and that the Go version is go.mod's.
FROM golang:1.26 AS builder
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY main.go ./
COPY apis/ apis/
COPY controllers/ controllers/
COPY indexers/ indexers/
COPY internal/ internal/
COPY sources/ sources/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o manager .

# Run: distroless, non-root (the manifests' runAsUser and runAsGroup are the same IDs).
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532
ENTRYPOINT ["/manager"]
