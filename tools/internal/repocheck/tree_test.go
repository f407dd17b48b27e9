package repocheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/onceflow/onceflow/tools/internal/rename"
)

// root is the repository's root, seen from this package's directory.
const root = "../../.."

// copyTree copies into a temporary directory what a rename looks at in the
// repository (all but .git and bin/, see [rename.Walk]), leaving out binary
// files unless withBinary.
func copyTree(t *testing.T, withBinary bool) string {
	t.Helper()
	dst := t.TempDir()
	err := rename.Walk(root, func(path, rel string, d fs.DirEntry) error {
		if d.IsDir() {
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
