package invoicy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Settings name one InvoiCy branch and where to reach it, as every service
// that calls InvoiCy reads them from its environment (the invoicer emits
// there, the reconciler audits it): one set of variables with one meaning.
// A service's config embeds Settings. Nothing has a default: an unset
// INVOICY_BASE_URL means no InvoiCy is named, which the reconciler reads as
// "no audit" and the invoicer refuses with its invoicy adapter.
type Settings struct {
	// BaseURL is the InvoiCy root, e.g. https://appuy.migrate.info/InvoiCy/.
	BaseURL string `env:"INVOICY_BASE_URL"`
	// EmpCodigo is the branch integration code.
	EmpCodigo string `env:"INVOICY_EMP_CODIGO"`
	// EmpPK is the partner key.
	EmpPK string `env:"INVOICY_EMP_PK"`
	// AccessKey is the branch access key (ClaveAcceso).
	AccessKey string `env:"INVOICY_ACCESS_KEY"`
}

// Named reports whether the settings name an InvoiCy (INVOICY_BASE_URL is set).
func (s Settings) Named() bool { return s.BaseURL != "" }

// Validate checks that the settings name a complete branch: an absolute
// http(s) root and non-blank credentials. The error joins one error per bad
// variable, each naming it.
func (s Settings) Validate() error {
	var errs []error
	if u, err := url.Parse(s.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("INVOICY_BASE_URL: want the InvoiCy root as an http(s) URL"))
	}
	for _, v := range []struct{ name, value string }{
		{"INVOICY_EMP_CODIGO", s.EmpCodigo}, {"INVOICY_EMP_PK", s.EmpPK}, {"INVOICY_ACCESS_KEY", s.AccessKey},
	} {
		if strings.TrimSpace(v.value) == "" {
			errs = append(errs, fmt.Errorf("%s: required", v.name))
		}
	}
	return errors.Join(errs...)
}

// Config returns the adapter's Config for the branch the settings name; the
// caller adds what it decides itself (timeout, status map, rate limit).
func (s Settings) Config() Config {
	return Config{BaseURL: s.BaseURL, EmpCodigo: s.EmpCodigo, EmpPK: s.EmpPK, AccessKey: s.AccessKey}
}
