package main

import (
	"os"
	"strings"
	"testing"
)

func TestParseDockerfile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	build, base, err := parseDockerfile(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(build, "go build") || !strings.Contains(build, "-ldflags") {
		t.Errorf("build = %q, want the Dockerfile's go build with its flags", build)
	}
	if base != "gcr.io/distroless/static-debian12:nonroot" {
		t.Errorf("base = %q, want the final stage's", base)
	}
	got := withOutput(`CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/svc ./cmd/svc`, "/tmp/x/binary")
	if want := `CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /tmp/x/binary ./cmd/svc`; got != want {
		t.Errorf("withOutput = %q, want %q", got, want)
	}
	if _, _, err := parseDockerfile("FROM scratch\nRUN go build ./...\n"); err == nil {
		t.Error("a go build without -o was accepted")
	}
}

func TestReplaceMarked(t *testing.T) {
	t.Parallel()
	doc := "The image is <!-- image-size -->old<!-- /image-size -->.\n"
	got, err := replaceMarked(doc, "about 30 MiB")
	if want := "The image is <!-- image-size -->about 30 MiB<!-- /image-size -->.\n"; err != nil || got != want {
		t.Errorf("replaceMarked = %q, %v; want %q", got, err, want)
	}
	if _, err := replaceMarked("no markers", "x"); err == nil {
		t.Error("a document without markers was accepted")
	}
}
