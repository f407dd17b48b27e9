package rename

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// Leftovers lists the paths under dir, relative to it, that still carry old
// (in any case) in their name or, for text files, their content. What [Tree]
// does not rewrite is not looked at: binary files, .git and bin/.
func Leftovers(dir, old string) ([]string, error) {
	lower := []byte(strings.ToLower(old))
	var left []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && skipped(rel) {
			return filepath.SkipDir
		}
		if strings.Contains(strings.ToLower(d.Name()), string(lower)) {
			left = append(left, rel)
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, text, err := ReadText(path)
		if text && bytes.Contains(bytes.ToLower(b), lower) {
			left = append(left, rel)
		}
		return err
	})
	return left, err
}
