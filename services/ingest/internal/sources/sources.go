// Package sources reads ingest's webhook sources from a YAML file: per source
// its route name, kind, signature scheme, secrets, timestamp tolerance,
// dedupe rule and body limit. A bad file stops the service with a message
// naming the source and the field.
package sources

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/time/rate"

	"github.com/onceflow/onceflow/pkg/webhooksig"
	"github.com/onceflow/onceflow/services/ingest/internal/webhook"
)

// Defaults applied to a source that leaves the field out.
const (
	DefaultTolerance = 5 * time.Minute
	DefaultMaxBytes  = 1 << 20
	maxBodyLimit     = 10 << 20
)

// File is the YAML document: a list of sources.
type File struct {
	Sources []Spec `yaml:"sources"`
}

// Spec is one source as written in the file.
type Spec struct {
	// Name is the route: POST /webhooks/{name}.
	Name string `yaml:"name"`
	// Kind is psp, fiscal_provider or generic.
	Kind string `yaml:"kind"`
	// PSP names the payment service provider of a psp source, whose
	// adapter re-fetches its objects: dlocal (the default, so files
	// written before the field keep working).
	PSP string `yaml:"psp"`
	// Chargeback is what a psp source's chargeback of an invoiced payment
	// becomes: case (the default: a chargeback case for a person) or
	// credit_note (a credit note for what the payment's refunds left).
	Chargeback string `yaml:"chargeback"`
	// Scheme is dlocal, stripe, mercadopago, standard, timestamped or
	// hmac_sha256.
	Scheme string `yaml:"scheme"`
	// Header carries the signature for timestamped and hmac_sha256.
	Header string `yaml:"header"`
	// Login is the dLocal merchant login the dlocal scheme signs with.
	Login string `yaml:"login"`
	// Secrets are literal values or "env:NAME"; several at once during a
	// rotation.
	Secrets []string `yaml:"secrets"`
	// Tolerance bounds the signed timestamp's distance from now, e.g. "5m";
	// "0s" turns the check off.
	Tolerance string `yaml:"tolerance"`
	// Dedupe is dlocal, stripe, body:<field> or header:<name>; a header
	// only if the scheme signs it (standard's webhook-id). A psp source
	// takes its PSP's rule.
	Dedupe string `yaml:"dedupe"`
	// DedupeScope groups sources whose events share ids (one sender
	// reaching two endpoints); it defaults to the name.
	DedupeScope string `yaml:"dedupe_scope"`
	// MaxBodyBytes limits the body; 1 MiB by default.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// RatePerSecond limits the deliveries taken per second (0, the
	// default, for no limit); Burst is how many may come at once (by
	// default the rate, rounded up).
	RatePerSecond float64 `yaml:"rate_per_second"`
	Burst         int     `yaml:"burst"`
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// Load reads and validates the file at path, resolving "env:" secrets with
// getenv.
func Load(path string, getenv func(string) string) ([]webhook.Source, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("INGEST_WEBHOOK_SOURCES_FILE: %w", err)
	}
	srcs, err := Parse(raw, getenv)
	if err != nil {
		return nil, fmt.Errorf("INGEST_WEBHOOK_SOURCES_FILE %s: %w", path, err)
	}
	return srcs, nil
}

// Parse validates a YAML document and builds its sources.
func Parse(raw []byte, getenv func(string) string) ([]webhook.Source, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a valid sources file: %w", err)
	}
	if len(f.Sources) == 0 {
		return nil, errors.New("sources: want at least one source")
	}
	seen := map[string]bool{}
	out := make([]webhook.Source, 0, len(f.Sources))
	for i, spec := range f.Sources {
		src, err := spec.build(getenv)
		if err != nil {
			return nil, fmt.Errorf("source %q (#%d): %w", spec.Name, i+1, err)
		}
		if seen[src.Name] {
			return nil, fmt.Errorf("source %q (#%d): name: used twice", spec.Name, i+1)
		}
		seen[src.Name] = true
		out = append(out, src)
	}
	return out, nil
}

func (s Spec) build(getenv func(string) string) (webhook.Source, error) {
	if !namePattern.MatchString(s.Name) {
		return webhook.Source{}, errors.New("name: want lower-case letters, digits, - or _ (it is the route /webhooks/{name})")
	}
	kind, err := parseKind(s.Kind)
	if err != nil {
		return webhook.Source{}, err
	}
	if s, err = s.withPSP(kind); err != nil {
		return webhook.Source{}, err
	}
	secrets, err := resolveSecrets(s.Secrets, getenv)
	if err != nil {
		return webhook.Source{}, err
	}
	tolerance, err := s.tolerance()
	if err != nil {
		return webhook.Source{}, err
	}
	verifier, err := s.verifier(secrets, tolerance, getenv)
	if err != nil {
		return webhook.Source{}, err
	}
	identify, err := s.identify(kind)
	if err != nil {
		return webhook.Source{}, err
	}
	maxBytes, err := s.maxBytes()
	if err != nil {
		return webhook.Source{}, err
	}
	if err := checkStrength(s.Scheme, secrets); err != nil {
		return webhook.Source{}, err
	}
	limiter, err := s.limiter()
	if err != nil {
		return webhook.Source{}, err
	}
	scope := s.DedupeScope
	if scope == "" {
		scope = s.Name
	}
	return webhook.Source{Name: s.Name, Kind: kind, PSP: s.PSP, ChargebackCreditNote: s.Chargeback == "credit_note", Scope: scope, MaxBytes: maxBytes, Verifier: verifier, Identify: identify, Limiter: limiter}, nil
}

// pspWebhooks is the signature scheme and dedupe rule of each PSP's
// webhooks: a psp source takes its PSP's.
var pspWebhooks = map[string]struct{ scheme, dedupe string }{
	"dlocal":      {scheme: "dlocal", dedupe: "dlocal"},
	"stripe":      {scheme: "stripe", dedupe: "stripe"},
	"mercadopago": {scheme: "mercadopago", dedupe: "mercadopago"},
}

// withPSP checks the psp field against the kind and fills in the PSP's
// scheme and dedupe rule where the source leaves them out.
func (s Spec) withPSP(kind webhook.Kind) (Spec, error) {
	if kind != webhook.KindPSP {
		if s.PSP != "" || s.Chargeback != "" {
			return s, errors.New("psp, chargeback: only a source of kind psp names a PSP or a chargeback rule")
		}
		return s, nil
	}
	if s.Chargeback != "" && s.Chargeback != "case" && s.Chargeback != "credit_note" {
		return s, errors.New("chargeback: want case or credit_note")
	}
	if s.PSP == "" {
		s.PSP = "dlocal"
	}
	w, ok := pspWebhooks[s.PSP]
	if !ok {
		return s, errors.New("psp: want dlocal, stripe or mercadopago")
	}
	if s.Scheme == "" {
		s.Scheme = w.scheme
	}
	if s.Dedupe == "" {
		s.Dedupe = w.dedupe
	}
	if s.Scheme != w.scheme {
		return s, fmt.Errorf("scheme: a %s source takes the %s scheme", s.PSP, w.scheme)
	}
	if s.Dedupe != w.dedupe {
		return s, fmt.Errorf("dedupe: a %s source takes the %s rule", s.PSP, w.dedupe)
	}
	return s, nil
}

func parseKind(k string) (webhook.Kind, error) {
	switch kind := webhook.Kind(k); kind {
	case webhook.KindPSP, webhook.KindFiscalProvider, webhook.KindGeneric:
		return kind, nil
	}
	return "", errors.New("kind: want psp, fiscal_provider or generic")
}

func resolveSecrets(specs []string, getenv func(string) string) ([]string, error) {
	if len(specs) == 0 {
		return nil, errors.New("secrets: want at least one secret (a value or env:NAME)")
	}
	out := make([]string, len(specs))
	for i, s := range specs {
		if name, ok := strings.CutPrefix(s, "env:"); ok {
			s = getenv(name)
			if s == "" {
				return nil, fmt.Errorf("secrets[%d]: environment variable %s is empty", i, name)
			}
		}
		if s == "" {
			return nil, fmt.Errorf("secrets[%d]: empty", i)
		}
		out[i] = s
	}
	return out, nil
}

func (s Spec) tolerance() (time.Duration, error) {
	if s.Tolerance == "" {
		if s.Scheme == "dlocal" || s.Scheme == "hmac_sha256" || s.Scheme == "mercadopago" {
			return 0, nil
		}
		return DefaultTolerance, nil
	}
	d, err := time.ParseDuration(s.Tolerance)
	if err != nil || d < 0 {
		return 0, errors.New("tolerance: want a duration such as 5m, or 0s for no check")
	}
	return d, nil
}

// limiter returns the source's rate limiter, or nil for none.
func (s Spec) limiter() (*rate.Limiter, error) {
	switch {
	case s.RatePerSecond < 0 || math.IsNaN(s.RatePerSecond) || math.IsInf(s.RatePerSecond, 0):
		return nil, errors.New("rate_per_second: want a positive number, or 0 for no limit")
	case s.Burst < 0:
		return nil, errors.New("burst: want a positive number of deliveries")
	case s.RatePerSecond == 0 && s.Burst != 0:
		return nil, errors.New("burst: goes with rate_per_second")
	case s.RatePerSecond == 0:
		return nil, nil
	}
	burst := s.Burst
	if burst == 0 {
		burst = int(math.Ceil(s.RatePerSecond))
	}
	return rate.NewLimiter(rate.Limit(s.RatePerSecond), burst), nil
}

func (s Spec) maxBytes() (int64, error) {
	switch {
	case s.MaxBodyBytes == 0:
		return DefaultMaxBytes, nil
	case s.MaxBodyBytes < 0 || s.MaxBodyBytes > maxBodyLimit:
		return 0, fmt.Errorf("max_body_bytes: want 1 to %d", maxBodyLimit)
	}
	return s.MaxBodyBytes, nil
}

func (s Spec) verifier(secrets []string, tolerance time.Duration, getenv func(string) string) (webhooksig.Verifier, error) {
	switch s.Scheme {
	case "dlocal":
		login := s.Login
		if name, ok := strings.CutPrefix(login, "env:"); ok {
			login = getenv(name)
		}
		if login == "" {
			return nil, errors.New("login: want the dLocal merchant login (a value or env:NAME)")
		}
		return webhooksig.DLocal{Login: login, Secrets: secrets, Tolerance: tolerance}, nil
	case "stripe":
		return webhooksig.Timestamped{Header: webhooksig.StripeHeader, Secrets: secrets, Tolerance: tolerance}, nil
	case "mercadopago":
		return webhook.MercadoPago{Secrets: secrets, Tolerance: tolerance}, nil
	case "timestamped", "hmac_sha256":
		if s.Header == "" {
			return nil, fmt.Errorf("header: want the header carrying the %s signature", s.Scheme)
		}
		if s.Scheme == "hmac_sha256" {
			return webhooksig.HMACHex{Header: s.Header, Secrets: secrets}, nil
		}
		return webhooksig.Timestamped{Header: s.Header, Secrets: secrets, Tolerance: tolerance}, nil
	case "standard":
		v, err := webhooksig.NewStandard(secrets, tolerance)
		if err != nil {
			return nil, fmt.Errorf("secrets: %w", err)
		}
		return v, nil
	}
	return nil, errors.New("scheme: want dlocal, stripe, mercadopago, standard, timestamped or hmac_sha256")
}

// identify picks the dedupe rule; each scheme has a sensible default.
func (s Spec) identify(kind webhook.Kind) (webhook.Identifier, error) {
	rule := s.Dedupe
	if rule == "" {
		rule = map[string]string{"dlocal": "dlocal", "standard": "header:webhook-id"}[s.Scheme]
		if rule == "" {
			rule = "body:id"
		}
	}
	if (rule == "dlocal" || rule == "stripe" || rule == "mercadopago") && kind != webhook.KindPSP {
		return nil, fmt.Errorf("dedupe: the %s rule goes with kind psp", rule)
	}
	switch rule {
	case "dlocal":
		return webhook.DLocalIdentifier, nil
	case "stripe":
		return webhook.StripeIdentifier, nil
	case "mercadopago":
		return webhook.MercadoPagoIdentifier, nil
	}
	from, name, _ := strings.Cut(rule, ":")
	if name == "" || (from != "body" && from != "header") {
		return nil, errors.New("dedupe: want dlocal, stripe, mercadopago, body:<field> or header:<name>")
	}
	if from == "header" {
		if err := checkSignedHeader(s.Scheme, name); err != nil {
			return nil, err
		}
	}
	return webhook.EventIdentifier(from, name, kind), nil
}

// FromEnv loads the file at path, or, when path is empty, the one source
// ingest has without a file: dLocal at /webhooks/dlocal, verified with
// DLOCAL_LOGIN and DLOCAL_SECRET_KEY.
func FromEnv(path string, getenv func(string) string) ([]webhook.Source, error) {
	if path != "" {
		return Load(path, getenv)
	}
	src, err := Spec{Name: "dlocal", Kind: "psp", Scheme: "dlocal", Login: "env:DLOCAL_LOGIN", Secrets: []string{"env:DLOCAL_SECRET_KEY"}}.build(getenv)
	if err != nil {
		return nil, fmt.Errorf("default dlocal source: %w", err)
	}
	return []webhook.Source{src}, nil
}

// PSPScopes maps each PSP named by a source to the dedupe scope of its
// sources: the apply worker finds a receipt's adapter by its scope, and the
// status poller records its receipts there, so a late webhook of the same
// status is a duplicate. A PSP's sources must share one scope, and two PSPs
// must not share one.
func PSPScopes(srcs []webhook.Source) (map[string]string, error) {
	scopes, owners := map[string]string{}, map[string]string{}
	for _, s := range srcs {
		if s.Kind != webhook.KindPSP {
			continue
		}
		if scope, ok := scopes[s.PSP]; ok && scope != s.Scope {
			return nil, fmt.Errorf("source %q: dedupe_scope: the %s sources must share one scope (%q)", s.Name, s.PSP, scope)
		}
		if owner, ok := owners[s.Scope]; ok && owner != s.PSP {
			return nil, fmt.Errorf("source %q: dedupe_scope: %q is the %s sources' scope already", s.Name, s.Scope, owner)
		}
		scopes[s.PSP], owners[s.Scope] = s.Scope, s.PSP
	}
	return scopes, nil
}

// ChargebackCreditNote returns the dedupe scopes whose chargebacks are
// credited automatically; the psp sources of one scope must agree.
func ChargebackCreditNote(srcs []webhook.Source) (map[string]bool, error) {
	out, seen := map[string]bool{}, map[string]bool{}
	for _, s := range srcs {
		if s.Kind != webhook.KindPSP {
			continue
		}
		if seen[s.Scope] && out[s.Scope] != s.ChargebackCreditNote {
			return nil, fmt.Errorf("source %q: chargeback: the sources of scope %q must agree", s.Name, s.Scope)
		}
		seen[s.Scope], out[s.Scope] = true, s.ChargebackCreditNote
	}
	return out, nil
}
