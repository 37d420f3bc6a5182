package app

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/config"
)

// Config is the console's configuration, read from the environment. The
// console has no database: DATABASE_URL is unused. ADMIN_TOKEN is the
// bearer token the console sends to the services' admin APIs.
type Config struct {
	config.Common
	// The services' admin base URLs: where each serves /admin.
	IngestAdminURL     string        `env:"CONSOLE_INGEST_ADMIN_URL" envDefault:"http://localhost:8080"`
	RelayAdminURL      string        `env:"CONSOLE_RELAY_ADMIN_URL" envDefault:"http://localhost:8081"`
	InvoicerAdminURL   string        `env:"CONSOLE_INVOICER_ADMIN_URL" envDefault:"http://localhost:8082"`
	ReconcilerAdminURL string        `env:"CONSOLE_RECONCILER_ADMIN_URL" envDefault:"http://localhost:8083"`
	AdminTimeout       time.Duration `env:"CONSOLE_ADMIN_TIMEOUT" envDefault:"10s"`
	// UsersFile is the local users file ("login role bcrypt-hash" lines);
	// empty when only OIDC signs people in.
	UsersFile string `env:"CONSOLE_USERS_FILE"`
	// SessionKey signs and encrypts session cookies (32 bytes or more);
	// empty makes a random one at start, which signs everyone out on a
	// restart and does not work across replicas.
	SessionKey string        `env:"CONSOLE_SESSION_KEY"`
	SessionTTL time.Duration `env:"CONSOLE_SESSION_TTL" envDefault:"8h"`
	// InsecureCookies drops the Secure flag, for plain HTTP on a host
	// other than localhost; never in production.
	InsecureCookies bool `env:"CONSOLE_INSECURE_COOKIES" envDefault:"false"`
	// Queues are the SQS queues the board shows, each with its "-dlq".
	Queues   string        `env:"CONSOLE_QUEUES" envDefault:"onceflow-billing,onceflow-provider-events,onceflow-notifications"`
	Refresh  time.Duration `env:"CONSOLE_REFRESH" envDefault:"5s"`
	TraceURL string        `env:"CONSOLE_TRACE_URL"`
	// OIDC, when CONSOLE_OIDC_ISSUER is set.
	OIDCIssuer       string `env:"CONSOLE_OIDC_ISSUER"`
	OIDCClientID     string `env:"CONSOLE_OIDC_CLIENT_ID"`
	OIDCClientSecret string `env:"CONSOLE_OIDC_CLIENT_SECRET"`
	OIDCRedirectURL  string `env:"CONSOLE_OIDC_REDIRECT_URL"`
	OIDCOperators    string `env:"CONSOLE_OIDC_OPERATORS"`
}

// Validate checks every setting; the error names the variable at fault and
// what it expects.
func (c Config) Validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	for _, u := range []struct{ name, value string }{{"CONSOLE_INGEST_ADMIN_URL", c.IngestAdminURL},
		{"CONSOLE_RELAY_ADMIN_URL", c.RelayAdminURL}, {"CONSOLE_INVOICER_ADMIN_URL", c.InvoicerAdminURL},
		{"CONSOLE_RECONCILER_ADMIN_URL", c.ReconcilerAdminURL}} {
		p, err := url.Parse(u.value)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("%s: want an http(s) URL such as http://ingest:9090", u.name)
		}
	}
	checks := []struct {
		ok         bool
		name, want string
	}{
		{c.UsersFile != "" || c.OIDCIssuer != "", "CONSOLE_USERS_FILE", "a users file, or CONSOLE_OIDC_ISSUER set: nobody could sign in"},
		{c.SessionKey == "" || len(c.SessionKey) >= 32, "CONSOLE_SESSION_KEY", "at least 32 characters (or unset for a random key)"},
		{c.SessionTTL >= time.Minute, "CONSOLE_SESSION_TTL", "a duration of at least 1m such as 8h"},
		{c.AdminTimeout > 0, "CONSOLE_ADMIN_TIMEOUT", "a positive duration such as 10s"},
		{c.Refresh >= 500*time.Millisecond, "CONSOLE_REFRESH", "a duration of at least 500ms such as 5s"},
		{len(c.QueueNames()) > 0, "CONSOLE_QUEUES", "comma-separated queue names"},
		{c.OIDCIssuer == "" || (c.OIDCClientID != "" && c.OIDCRedirectURL != ""), "CONSOLE_OIDC_CLIENT_ID", "set, with CONSOLE_OIDC_REDIRECT_URL, when CONSOLE_OIDC_ISSUER is"},
		{c.TraceURL == "" || strings.Contains(c.TraceURL, "{trace_id}"), "CONSOLE_TRACE_URL", "a URL containing {trace_id}"},
	}
	for _, ch := range checks {
		if !ch.ok {
			return fmt.Errorf("%s: want %s", ch.name, ch.want)
		}
	}
	return nil
}

// QueueNames splits CONSOLE_QUEUES.
func (c Config) QueueNames() []string { return split(c.Queues) }

// Operators splits CONSOLE_OIDC_OPERATORS into lower-case emails.
func (c Config) Operators() []string { return split(strings.ToLower(c.OIDCOperators)) }

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
