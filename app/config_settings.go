package app

import (
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caarlos0/env/v11"
)

// setting is one environment variable of [Config], as its field declares
// it in tags (see Config). Validate, LogValue and docs/configuration.md all
// read it from here.
type setting struct {
	Name    string   // the variable: the env tag
	Field   string   // the Go field
	Default string   // envDefault; "" when unset
	Allowed []string // the allowed tag split at |, or runtimeAllowed's list; nil: any value its type parses
	Secret  string   // the secret tag: "" or one of the secret* kinds
	Type    reflect.Type
	index   []int
}

// The secret kinds, the values of a secret tag: what the effective
// configuration's log line shows of the setting.
const (
	secretURL     = "url"     // the URL, its credentials masked by redact
	secretAPIKeys = "apikeys" // key:name pairs, each key masked, its name (client, operator) shown
	secretWhole   = "true"    // only whether it is set, as NAME_set
)

// settings lists Config's settings in the order of its fields. A malformed
// declaration is a programming error, so it panics; TestSettingsDeclared
// (and any test that loads a configuration) finds it first.
var settings = sync.OnceValue(func() []setting {
	t := reflect.TypeFor[Config]()
	list := make([]setting, 0, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name == "" {
			panic(fmt.Sprintf("app.Config.%s has no env tag", f.Name))
		}
		s := setting{
			Name:    name,
			Field:   f.Name,
			Default: f.Tag.Get("envDefault"),
			Secret:  f.Tag.Get("secret"),
			Type:    f.Type,
			index:   f.Index,
		}
		if a, ok := f.Tag.Lookup("allowed"); ok {
			s.Allowed = strings.Split(a, "|")
		}
		values, runtime := runtimeAllowed[f.Name]
		if runtime {
			s.Allowed = slices.Clone(values)
		}
		switch {
		case runtime && f.Tag.Get("allowed") != "":
			panic(fmt.Sprintf("app.Config.%s: an allowed tag and a runtimeAllowed list", f.Name))
		case s.Allowed != nil && f.Type.Kind() != reflect.String:
			panic(fmt.Sprintf("app.Config.%s: an allowed tag on a %s", f.Name, f.Type))
		case !slices.Contains([]string{"", secretURL, secretAPIKeys, secretWhole}, s.Secret):
			panic(fmt.Sprintf("app.Config.%s: secret:%q is none of url, apikeys, true", f.Name, s.Secret))
		case s.Secret != "" && f.Type.Kind() != reflect.String:
			panic(fmt.Sprintf("app.Config.%s: a secret tag on a %s", f.Name, f.Type))
		}
		list = append(list, s)
	}
	return list
})

// value is the setting's field in c, a Config (or a pointer to one, to
// set it).
func (s setting) value(c reflect.Value) reflect.Value {
	return reflect.Indirect(c).FieldByIndex(s.index)
}

// checkAllowed refuses a value the setting's allowed tag does not list.
func (s setting) checkAllowed(value string) error {
	if s.Allowed == nil || slices.Contains(s.Allowed, value) {
		return nil
	}
	return fmt.Errorf("%s=%q is not allowed: use one of %s", s.Name, value, strings.Join(s.Allowed, ", "))
}

// logAttr is the setting, whose value is v, in the effective
// configuration's log line: its variable's name in lower case, its value
// masked as its secret tag says.
func (s setting) logAttr(v reflect.Value) slog.Attr {
	key := strings.ToLower(s.Name)
	switch s.Secret {
	case secretURL:
		return slog.String(key, redact(v.String()))
	case secretAPIKeys:
		return slog.String(key, maskAPIKeys(v.String()))
	case secretWhole:
		return slog.Bool(key+"_set", v.String() != "")
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return slog.String(key, d.String()) // the JSON handler would write nanoseconds
	}
	return slog.Any(key, v.Interface())
}

// settingNamed is the setting that reads the variable name.
func settingNamed(name string) (setting, bool) {
	for _, s := range settings() {
		if s.Name == name {
			return s, true
		}
	}
	return setting{}, false
}

// CheckSetting checks one variable on its own, as a deploy file sets it:
// it is a setting of Config, its value parses as the setting's type, and
// its allowed tag allows it. Rules that bind settings together are the
// whole configuration's (LoadConfig).
func CheckSetting(name, value string) error {
	s, ok := settingNamed(name)
	if !ok {
		return fmt.Errorf("%s is not a setting: app.Config declares no such variable", name)
	}
	var cfg Config
	if err := env.ParseWithOptions(&cfg, env.Options{Environment: map[string]string{name: value}}); err != nil {
		return explainParseError(err)
	}
	if s.Allowed != nil {
		return s.checkAllowed(s.value(reflect.ValueOf(cfg)).String())
	}
	return nil
}
