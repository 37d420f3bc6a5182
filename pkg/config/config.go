// Package config loads each service's typed configuration from environment
// variables, validates it once at start and renders it for the log with
// secrets masked.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"go.uber.org/zap"
)

// Common holds the settings every service shares. HTTP_ADDR (the public
// port: webhooks, /v1, /healthz, /readyz) and ADMIN_ADDR (the operator
// port: /admin, /metrics, /debug/pprof, detailed /readyz; never exposed
// publicly) are host:port, or fd:N to serve on a listening socket the
// parent process passed down as descriptor N (package listener).
type Common struct {
	DatabaseURL     string        `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"`
	AWSRegion       string        `env:"AWS_REGION" envDefault:"us-east-1"`
	SQSEndpoint     string        `env:"AWS_ENDPOINT_URL_SQS"`
	HTTPAddr        string        `env:"HTTP_ADDR" envDefault:":8080"`
	AdminAddr       string        `env:"ADMIN_ADDR" envDefault:":9090"`
	LogLevel        string        `env:"LOG_LEVEL" envDefault:"info"`
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"20s"`
	// StallTimeout is how long a background loop may go without progress
	// before /healthz (the liveness probe) fails.
	StallTimeout time.Duration `env:"LOOP_STALL_TIMEOUT" envDefault:"10m"`
	// AdminToken guards the operator endpoints (/admin/...); unset, they
	// refuse every request.
	AdminToken string `env:"ADMIN_TOKEN"`
}

// Shared returns the shared settings; every service's config embeds Common
// and so has this method, which is how pkg/service reads them.
func (c Common) Shared() Common { return c }

// Validate checks the shared settings.
func (c Common) Validate() error {
	if _, err := url.Parse(c.DatabaseURL); err != nil || c.DatabaseURL == "" {
		return errors.New("DATABASE_URL: want a postgres:// URL")
	}
	if samePort(c.HTTPAddr, c.AdminAddr) {
		return errors.New("ADMIN_ADDR: want a port other than HTTP_ADDR's (the admin port is never exposed publicly)")
	}
	if c.ShutdownTimeout <= 0 {
		return errors.New("SHUTDOWN_TIMEOUT: want a positive duration such as 20s")
	}
	if c.StallTimeout < time.Minute {
		return errors.New("LOOP_STALL_TIMEOUT: want at least 1m, longer than one round of work")
	}
	return nil
}

// samePort reports whether two listen addresses name one fixed port: the
// same non-zero port on the same host or on all interfaces (port 0 picks a
// free one each time; fd:N parses as host "fd", port N).
func samePort(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa == pb && pa != "0" && (ha == hb || ha == "" || hb == "")
}

// Validator is implemented by configs that check their own values.
type Validator interface{ Validate() error }

// Loaded is a parsed configuration plus the settings it was read from,
// masked and ready to log.
type Loaded[T any] struct {
	Value T
	// Renamed maps each old variable name that was read to its new name,
	// for the service to warn about: old names are read for one release.
	Renamed map[string]string
	values  map[string]string
}

// Getenv looks up one environment variable, as os.Getenv does. Services take
// it from their caller so tests can hand each instance its own environment.
type Getenv func(key string) string

// Load parses the process environment into a T; see LoadFrom.
func Load[T any]() (Loaded[T], error) { return LoadFrom[T](os.Getenv) }

// LoadFrom parses the variables getenv returns into a T and validates it.
// Errors name the variable and what it expects. A field tagged
// `renamed:"OLD_NAME"` is also read from OLD_NAME when its own variable is
// unset; Loaded.Renamed then says which new name to use instead. A field of
// type Getenv (tagged `env:"-"`) receives getenv itself, for a config whose
// settings name further variables only at run time (ingest's sources file
// refers to secrets as env:NAME).
func LoadFrom[T any](getenv Getenv) (Loaded[T], error) {
	environment, renamed := lookup(reflect.TypeFor[T](), getenv)
	values := map[string]string{}
	cfg, err := env.ParseAsWithOptions[T](env.Options{
		Environment: environment,
		OnSet: func(key string, value any, _ bool) {
			values[key] = mask(key, fmt.Sprint(value))
		},
	})
	if err != nil {
		return Loaded[T]{}, fmt.Errorf("config: %w", nameVariables[T](err))
	}
	keepGetenv(&cfg, getenv)
	if v, ok := any(cfg).(Validator); ok {
		if err := v.Validate(); err != nil {
			return Loaded[T]{}, fmt.Errorf("config: %w", err)
		}
	}
	return Loaded[T]{Value: cfg, Renamed: renamed, values: values}, nil
}

// keepGetenv sets every top-level field of *cfg of type Getenv to getenv.
func keepGetenv[T any](cfg *T, getenv Getenv) {
	v := reflect.ValueOf(cfg).Elem()
	if v.Kind() != reflect.Struct {
		return
	}
	for i := range v.NumField() {
		if f := v.Field(i); f.Type() == reflect.TypeFor[Getenv]() && f.CanSet() {
			f.Set(reflect.ValueOf(getenv))
		}
	}
}

// lookup collects the variables of t's fields (embedded structs included)
// that getenv sets, reading a renamed field's old name when its new one is
// unset. It returns them and, for each old name used, the new one.
func lookup(t reflect.Type, getenv Getenv) (map[string]string, map[string]string) {
	environment, renamed := map[string]string{}, map[string]string{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			key, _, _ := strings.Cut(f.Tag.Get("env"), ",")
			if key == "" {
				continue
			}
			if v := getenv(key); v != "" {
				environment[key] = v
			} else if old := f.Tag.Get("renamed"); old != "" && getenv(old) != "" {
				environment[key] = getenv(old)
				renamed[old] = key
			}
		}
	}
	walk(t)
	return environment, renamed
}

// Warn logs one warning for each old variable name that was read.
func (l Loaded[T]) Warn(log *zap.Logger) {
	olds := make([]string, 0, len(l.Renamed))
	for old := range l.Renamed {
		olds = append(olds, old)
	}
	sort.Strings(olds)
	for _, old := range olds {
		log.Warn("setting read from its old name; rename it, the old name goes away in the next release",
			zap.String("old", old), zap.String("new", l.Renamed[old]))
	}
}

// Fields returns the settings as log fields, sorted, with secrets masked.
func (l Loaded[T]) Fields() []zap.Field {
	keys := make([]string, 0, len(l.values))
	for k := range l.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fields := make([]zap.Field, 0, len(keys))
	for _, k := range keys {
		fields = append(fields, zap.String(k, l.values[k]))
	}
	return fields
}

// nameVariables rewrites the library's parse errors, which name Go fields, so
// they name the environment variable and the value's expected type instead.
func nameVariables[T any](err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	msgs := make([]string, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			msgs = append(msgs, fmt.Sprintf("%s: want a value of type %s", envKey(reflect.TypeFor[T](), pe.Name), pe.Type))
			continue
		}
		msgs = append(msgs, e.Error())
	}
	return errors.New(strings.Join(msgs, "; "))
}

// envKey finds the env tag of the field called name, looking into embedded structs.
func envKey(t reflect.Type, name string) string {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Name == name {
			if key, _, _ := strings.Cut(f.Tag.Get("env"), ","); key != "" {
				return key
			}
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if key := envKey(f.Type, name); key != name {
				return key
			}
		}
	}
	return name
}
