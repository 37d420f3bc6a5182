// Package config loads each service's typed configuration from environment
// variables, validates it once at start and renders it for the log with
// secrets masked.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"go.uber.org/zap"
)

// Common holds the settings every service shares. HTTP_ADDR is host:port,
// or fd:N to serve on a listening socket the parent process passed down as
// descriptor N (package listener).
type Common struct {
	DatabaseURL     string        `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"`
	AWSRegion       string        `env:"AWS_REGION" envDefault:"us-east-1"`
	SQSEndpoint     string        `env:"AWS_ENDPOINT_URL_SQS"`
	HTTPAddr        string        `env:"HTTP_ADDR" envDefault:":8080"`
	LogLevel        string        `env:"LOG_LEVEL" envDefault:"info"`
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"20s"`
	// StallTimeout is how long a background loop may go without progress
	// before /healthz (the liveness probe) fails.
	StallTimeout time.Duration `env:"LOOP_STALL_TIMEOUT" envDefault:"10m"`
	// AdminToken guards the operator endpoints (/admin/...); unset, they
	// refuse every request.
	AdminToken string `env:"ADMIN_TOKEN"`
}

// Validate checks the shared settings.
func (c Common) Validate() error {
	if _, err := url.Parse(c.DatabaseURL); err != nil || c.DatabaseURL == "" {
		return errors.New("DATABASE_URL: want a postgres:// URL")
	}
	if c.ShutdownTimeout <= 0 {
		return errors.New("SHUTDOWN_TIMEOUT: want a positive duration such as 20s")
	}
	if c.StallTimeout < time.Minute {
		return errors.New("LOOP_STALL_TIMEOUT: want at least 1m, longer than one round of work")
	}
	return nil
}

// Validator is implemented by configs that check their own values.
type Validator interface{ Validate() error }

// Loaded is a parsed configuration plus the settings it was read from,
// masked and ready to log.
type Loaded[T any] struct {
	Value  T
	values map[string]string
}

// Load parses the environment into a T and validates it. Errors name the
// variable and what it expects.
func Load[T any]() (Loaded[T], error) {
	values := map[string]string{}
	cfg, err := env.ParseAsWithOptions[T](env.Options{
		OnSet: func(key string, value any, _ bool) {
			values[key] = mask(key, fmt.Sprint(value))
		},
	})
	if err != nil {
		return Loaded[T]{}, fmt.Errorf("config: %w", nameVariables[T](err))
	}
	if v, ok := any(cfg).(Validator); ok {
		if err := v.Validate(); err != nil {
			return Loaded[T]{}, fmt.Errorf("config: %w", err)
		}
	}
	return Loaded[T]{Value: cfg, values: values}, nil
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

var secretWords = []string{"SECRET", "PASSWORD", "TOKEN", "KEY", "PK", "CK"}

// mask hides values of secret-looking variables and passwords inside URLs.
func mask(key, value string) string {
	if value == "" {
		return ""
	}
	for _, w := range secretWords {
		if strings.HasSuffix(key, "_"+w) || strings.Contains(key, "_"+w+"_") {
			return "***"
		}
	}
	if u, err := url.Parse(value); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "***")
			return strings.Replace(u.String(), "%2A%2A%2A", "***", 1)
		}
	}
	return value
}
