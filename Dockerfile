# The slim conversion webhook (cmd/hubspoke-webhook): a static binary on
# distroless/static, run as the nonroot user (65532).
#
#   docker build -t hubspoke-webhook .
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/hubspoke-webhook:TAG --push .
#
# Without a daemon: ko (see .ko.yaml), or the OCI layout that
# internal/ociimage builds (docs/production.md, "The image").
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH VERSION=""
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X github.com/hubspoke/hubspoke/internal/servecmd.version=${VERSION}" \
      -o /out/hubspoke-webhook ./cmd/hubspoke-webhook

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hubspoke-webhook /hubspoke-webhook
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/hubspoke-webhook"]
CMD ["serve"]
