# Multi-stage build of the onceflow service: a static binary on distroless.
#
# Both images are pinned by digest, their tags kept beside them for the
# reader: a tag can be moved upstream, a digest cannot. To move to a newer
# build, resolve its tag's digest where you can pull (`docker buildx
# imagetools inspect <image>:<tag>` prints it) and replace both; a
# repository test (TestShippedImagesPinned) fails on an image left
# unpinned. No syntax directive: it would pull a frontend image of its
# own, unpinned; the builder's built-in frontend reads this file.

FROM golang:1.26.8-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/onceflow ./cmd/onceflow

FROM gcr.io/distroless/static-debian12:nonroot@sha256:b7bb25d9f7c31d2bdd1982feb4dafcaf137703c7075dbe2febb41c24212b946f
COPY --from=build /out/onceflow /onceflow
EXPOSE 8080
USER nonroot:nonroot
HEALTHCHECK --interval=5s --timeout=3s --retries=10 CMD ["/onceflow", "healthcheck"]
ENTRYPOINT ["/onceflow"]
CMD ["serve"]
