# Build: a static binary, built with the same command as `make build` (GO_BUILD_MANAGER in the
# Makefile). hack/build's test keeps the two in step, and checks that every package the manager
# imports is copied below and that the Go version is go.mod's.
FROM golang:1.26 AS builder
# What the manager says it is (`manager --version`), as the Makefile computes it from git, which
# this build has not: docker build --build-arg VERSION=... --build-arg REVISION=...
# --build-arg BUILD_DATE=... (`make version` prints the three). `make image` builds the image
# without Docker.
ARG VERSION=v0.0.0-unknown
ARG REVISION=unknown
ARG BUILD_DATE=unknown
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY main.go ./
COPY apis/ apis/
COPY controllers/ controllers/
COPY indexers/ indexers/
COPY internal/ internal/
COPY sources/ sources/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/example/switchboard/internal/version.version=${VERSION} -X github.com/example/switchboard/internal/version.revision=${REVISION} -X github.com/example/switchboard/internal/version.buildDate=${BUILD_DATE}" -o manager .

# Run: distroless, non-root (the manifests' runAsUser and runAsGroup are the same IDs). Its CA
# bundle (Debian's ca-certificates) is at /etc/ssl/certs/ca-certificates.crt, where `make image`
# puts Mozilla's roots from a Go module, so an https webhook is verified in either image.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532
ENTRYPOINT ["/manager"]
