package repocheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What the domain ships for deployment, beside its code, all below
// handlers/, so that it goes with the directory a fork replaces: its
// compose overlay and its Kubernetes manifests. The template's own files
// (docker-compose.yml, deploy/) name nothing of it.
const (
	// domainDir is the domain's directory.
	domainDir = "handlers"
	// composeOverlay is the domain's compose file, merged over
	// docker-compose.yml (the Makefile's COMPOSE_FILES): its own services
	// and its settings for the service's.
	composeOverlay = domainDir + "/compose.yml"
)

// composeFiles lists the compose files, relative to the root, in the
// order Compose merges them: docker-compose.yml, then the domain's
// overlay if it has one.
func composeFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"docker-compose.yml"}
	if _, err := os.Stat(filepath.Join(root, composeOverlay)); err == nil {
		files = append(files, composeOverlay)
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

// domainManifestDirs lists, relative to the root, the domain's
// Kubernetes manifest directories: every directory deploy/k8s below
// domainDir (handlers/deploy/k8s, handlers/shop/deploy/k8s), but in
// testdata. kubectl applies each with -R, as it applies deploy/k8s.
func domainManifestDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(filepath.Join(root, domainDir), func(p string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) && p == filepath.Join(root, domainDir) {
			return fs.SkipAll // no domain
		}
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		rel := filepath.ToSlash(mustRel(t, p))
		if strings.HasSuffix(rel, "/deploy/k8s") {
			dirs = append(dirs, rel)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// k8sDirs are the directories kubectl applies, relative to the root:
// deploy/k8s and the domain's (`kubectl apply -R -f deploy/k8s/ -f
// handlers/deploy/k8s/` for the example).
func k8sDirs(t *testing.T) []string {
	t.Helper()
	return append([]string{"deploy/k8s"}, domainManifestDirs(t)...)
}
