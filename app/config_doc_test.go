package app

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from app/config.go")

// configurationDoc is the page generated from Config's declarations.
const configurationDoc = "../docs/configuration.md"

// TestConfigurationDoc fails when docs/configuration.md is not the page
// Config's fields declare, and says how to regenerate it; with -update
// (go generate ./app) it rewrites the page.
func TestConfigurationDoc(t *testing.T) {
	want := configurationPage(t)
	if *update {
		if err := os.WriteFile(configurationDoc, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(configurationDoc)
	if err != nil {
		t.Fatalf("%v: generate it with `go generate ./app`", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/configuration.md is not what app/config.go declares: regenerate it with\n"+
			"\tgo generate ./app\n(or go test ./app -run TestConfigurationDoc -update)\n%s", firstDifference(got, want))
	}
}

// firstDifference shows the first line where got and want part.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n   is: %s\nwould be: %s", i+1, gl, wl)
		}
	}
	return ""
}

// fieldDocs reads the doc comment of each field of Config from config.go,
// by field name.
func fieldDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Config" {
			return true
		}
		for _, field := range ts.Type.(*ast.StructType).Fields.List {
			for _, name := range field.Names {
				docs[name.Name] = field.Doc.Text()
			}
		}
		return false
	})
	if len(docs) == 0 {
		t.Fatal("config.go declares no type Config")
	}
	return docs
}

// configurationPage renders docs/configuration.md: a table of every
// setting, in Config's order, from the tags and doc comments of its fields.
// No column is padded, so that a rename of the module rewrites the page
// and config.go alike.
func configurationPage(t *testing.T) []byte {
	docs := fieldDocs(t)
	var b bytes.Buffer
	b.WriteString(pageHeader)
	for _, s := range settings() {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", s.Name, code(defaultValue(s)), valuesCell(s), meaningCell(s, docs[s.Field]))
	}
	return b.Bytes()
}

// pageHeader introduces the table of settings.
var pageHeader = strings.Join([]string{
	"# Configuration",
	"",
	"<!-- Generated from the fields of Config in app/config.go: do not edit.",
	"     Change a field's doc comment or tags, then run go generate ./app. -->",
	"",
	"The service reads every setting once, from the environment, at start-up.",
	"A value a setting does not allow stops start-up with one line that names",
	"the variable and what it allows.",
	"",
	"The effective configuration is logged once, in the `starting` line's",
	"`config` group: every setting of the service and of the backends it",
	"opens (the transport `TRANSPORT` names, Redis for `STORE=redis` or a",
	"`redisstream` transport on `REDIS_URL`, PostgreSQL when `DATABASE_URL` is",
	"set) under its name in lower case, its secrets masked; the settings of",
	"other backends are left out, set or not. A URL is logged without its",
	"password, without a user name given with no password (it can be a token,",
	"as in `nats://TOKEN@host`) and without the values of query parameters",
	"that name a secret (`password`, `sslpassword`, `token`, `access_token`,",
	"`api_key`, `apikey`, `secret`...).",
	"`API_KEYS` and `ADMIN_API_KEYS` are logged with their names (clients,",
	"operators) but no key, another secret only as whether it is set.",
	"",
	"| variable | default | values | meaning |",
	"|---|---|---|---|",
	"",
}, "\n")

// code is s as a Markdown code span, or "" for "".
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// defaultValue is the setting's envDefault, or the value its type is
// without one: 0 for a number, "" (unset) for text and lists.
func defaultValue(s setting) string {
	if s.Default != "" {
		return s.Default
	}
	switch s.Type.Kind() {
	case reflect.Bool:
		return "false"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Float64:
		return fmt.Sprint(reflect.Zero(s.Type).Interface()) // 0, 0s
	}
	return ""
}

// valuesCell says what a setting takes: its allowed values, or the kind
// of value its type parses.
func valuesCell(s setting) string {
	switch {
	case s.Allowed != nil:
		vals := make([]string, len(s.Allowed))
		for i, a := range s.Allowed {
			vals[i] = code(a)
		}
		return strings.Join(vals, ", ")
	case s.Secret == secretURL:
		return "URL"
	case s.Secret == secretAPIKeys:
		return "`key:name` pairs, comma separated"
	case s.Type == reflect.TypeFor[time.Duration]():
		return "duration, such as `30s`"
	}
	switch s.Type.Kind() {
	case reflect.Bool:
		return "`true`, `false`"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list, comma separated"
	}
	return "text"
}

// secretNotes say what the log line shows of each kind of secret.
var secretNotes = map[string]string{
	secretURL:     "A secret: logged without its credentials.",
	secretAPIKeys: "A secret: logged with its names, not its keys.",
	secretWhole:   "A secret: never logged, only whether it is set.",
}

var (
	// goName is a word that may be a field of Config.
	goName = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)
	// envName is an environment variable, maybe with a value
	// (STORE=postgres) or as a prefix (CHAOS_*), or a URL.
	envName = regexp.MustCompile(`\b_?[A-Z][A-Z0-9_]*[A-Z0-9](_\*|=[a-z0-9][a-z0-9._-]*[a-z0-9])?|\b[a-z]+://[^\s)]*[^\s).,;:]`)
	// markdownEscaper keeps prose from turning into HTML, emphasis or
	// table columns.
	markdownEscaper = strings.NewReplacer("<", "&lt;", ">", "&gt;", "|", `\|`, "*", `\*`)
)

// meaningCell is a field's doc comment as one table cell: the fields it
// names are named by their variables, variables and URLs are code, the
// rest is escaped for Markdown; the note on the setting's secret follows.
func meaningCell(s setting, doc string) string {
	byField := map[string]string{}
	isSetting := map[string]bool{}
	for _, s := range settings() {
		byField[s.Field] = s.Name
		isSetting[s.Name] = true
	}
	text := strings.Join(strings.Fields(doc), " ")
	text = goName.ReplaceAllStringFunc(text, func(w string) string {
		if name, ok := byField[w]; ok {
			return name
		}
		return w
	})
	var b strings.Builder
	for i, part := range strings.Split(text, "`") {
		if i%2 == 1 { // within a code span
			b.WriteString(code(part))
			continue
		}
		last := 0
		for _, loc := range envName.FindAllStringIndex(part, -1) {
			m := part[loc[0]:loc[1]]
			name, _, _ := strings.Cut(m, "=")
			if strings.Contains(m, "://") || strings.Contains(name, "_") || isSetting[name] {
				b.WriteString(markdownEscaper.Replace(part[last:loc[0]]) + code(m))
				last = loc[1]
			}
		}
		b.WriteString(markdownEscaper.Replace(part[last:]))
	}
	if note := secretNotes[s.Secret]; note != "" {
		b.WriteString(" " + note)
	}
	return b.String()
}
