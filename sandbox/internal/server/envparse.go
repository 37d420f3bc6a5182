package server

import (
	"fmt"
	"strconv"
	"time"
)

// EnvParser reads optional typed variables; an unset variable leaves its
// destination alone. It keeps the first error, which names the variable.
type EnvParser struct {
	getenv func(string) string
	err    error
}

// NewEnvParser reads through getenv.
func NewEnvParser(getenv func(string) string) *EnvParser { return &EnvParser{getenv: getenv} }

// Err is the first error met, or nil.
func (p *EnvParser) Err() error { return p.err }

func (p *EnvParser) read(name string) (string, bool) {
	v := p.getenv(name)
	return v, v != "" && p.err == nil
}

// Rate reads a probability from 0 to 1.
func (p *EnvParser) Rate(name string, dst *float64) {
	if v, ok := p.read(name); ok {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || x > 1 {
			p.err = fmt.Errorf("%s %q: want a number from 0 to 1", name, v)
			return
		}
		*dst = x
	}
}

// Duration reads a non-negative Go duration.
func (p *EnvParser) Duration(name string, dst *time.Duration) {
	if v, ok := p.read(name); ok {
		x, err := time.ParseDuration(v)
		if err != nil || x < 0 {
			p.err = fmt.Errorf("%s %q: want a Go duration such as 500ms", name, v)
			return
		}
		*dst = x
	}
}

// Int reads an integer from lo to hi.
func (p *EnvParser) Int(name string, lo, hi int, dst *int) {
	if v, ok := p.read(name); ok {
		x, err := strconv.Atoi(v)
		if err != nil || x < lo || x > hi {
			p.err = fmt.Errorf("%s %q: want %d to %d", name, v, lo, hi)
			return
		}
		*dst = x
	}
}

// Seed reads an unsigned integer.
func (p *EnvParser) Seed(name string, dst *uint64) {
	if v, ok := p.read(name); ok {
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			p.err = fmt.Errorf("%s %q: want an unsigned integer", name, v)
			return
		}
		*dst = x
	}
}
