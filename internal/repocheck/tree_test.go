package repocheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/onceflow/onceflow/internal/rename"
)

// root is the repository's root, seen from this package's directory.
const root = "../.."

// copyTree copies the repository into a temporary directory, leaving out
// .git and bin/ (build output), and binary files unless withBinary.
func copyTree(t *testing.T, withBinary bool) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == ".git" || rel == "bin" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, text, err := rename.ReadText(path)
		if err != nil || !text && !withBinary {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
