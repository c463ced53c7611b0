# kube-state-push: a static binary on distroless, running as nonroot.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/kube-state-push/kube-state-push/agent.Version=${VERSION}" \
      -o /out/kube-state-push ./cmd/kube-state-push

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/kube-state-push /kube-state-push
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/kube-state-push"]
