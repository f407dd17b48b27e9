package rename

import (
	"bytes"
	"os"
	"strings"
)

// Leftovers lists the paths under dir, relative to it, that still carry old
// (in any case) in their name or, for text files, their content. What [Tree]
// does not rewrite is not looked at: binary files, .git and bin/.
func Leftovers(dir, old string) ([]string, error) {
	lower := []byte(strings.ToLower(old))
	var left []string
	err := Walk(dir, func(path, rel string, d os.DirEntry) error {
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
