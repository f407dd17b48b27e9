# syntax=docker/dockerfile:1
# Multi-stage build of the onceflow service: a static binary on distroless.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/onceflow ./cmd/onceflow

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/onceflow /onceflow
EXPOSE 8080
USER nonroot:nonroot
HEALTHCHECK --interval=5s --timeout=3s --retries=10 CMD ["/onceflow", "healthcheck"]
ENTRYPOINT ["/onceflow"]
CMD ["serve"]
