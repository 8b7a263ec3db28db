# Build: a static binary, built with the same command as `make build` (GO_BUILD_MANAGER in the
# Makefile; a test keeps the two in step).
FROM golang:1.26 AS builder
WORKDIR /workspace
COPY go.mod go.sum ./
RUN go mod download
COPY main.go ./
COPY apis/ apis/
COPY controllers/ controllers/
COPY indexers/ indexers/
COPY sources/ sources/
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o manager .

# Run: distroless, non-root.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532
ENTRYPOINT ["/manager"]
