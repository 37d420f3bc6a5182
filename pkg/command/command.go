// Package command dispatches a service binary's subcommands: serve (the
// default), migrate, healthcheck, and any extras a service adds.
package command

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/onceflow/onceflow/pkg/listener"
)

// Func is one subcommand.
type Func func(ctx context.Context) error

// Run runs the subcommand named by args[0] ("serve" when args is empty).
// Unknown names are an error listing the known ones.
func Run(ctx context.Context, args []string, cmds map[string]Func) error {
	name := "serve"
	if len(args) > 0 {
		name = args[0]
	}
	if _, ok := cmds["healthcheck"]; !ok {
		cmds["healthcheck"] = Healthcheck
	}
	fn, ok := cmds[name]
	if !ok {
		names := make([]string, 0, len(cmds))
		for n := range cmds {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown subcommand %q: want one of %s", name, strings.Join(names, ", "))
	}
	return fn(ctx)
}

// Healthcheck probes the running process's /healthz on HTTP_ADDR (default
// :8080), reading the process environment; see HealthcheckFrom.
func Healthcheck(ctx context.Context) error { return HealthcheckFrom(os.Getenv)(ctx) }

// HealthcheckFrom returns the healthcheck subcommand reading HTTP_ADDR and
// TLS_CERT_FILE through getenv. Container images have no curl, so docker
// compose health checks call the binary itself. When TLS_CERT_FILE is set
// the service serves HTTPS (httpserver.UseTLS), so the probe does too,
// trusting that file.
func HealthcheckFrom(getenv func(string) string) Func {
	return func(ctx context.Context) error {
		addr := getenv("HTTP_ADDR")
		if addr == "" {
			addr = ":8080"
		}
		if certFile := getenv("TLS_CERT_FILE"); certFile != "" {
			return ProbeTLS(ctx, addr, certFile)
		}
		return Probe(ctx, addr)
	}
}

// Probe GETs http://addr/healthz, dialling loopback when addr listens on
// every interface (":8080", "0.0.0.0:8080"). It returns an error unless the
// answer is 200 within 3 s.
func Probe(ctx context.Context, addr string) error {
	return probe(ctx, "http", addr, http.DefaultClient)
}

// ProbeTLS is Probe over HTTPS to a server that presents the certificate in
// certFile (PEM, the file the server was given; a chain's further
// certificates may follow). The probe dials its own loopback, where the
// certificate's names (the service's public ones) cannot match, so it checks
// the chain against the certificates in certFile alone, not the host name:
// it trusts only the very certificate the service was configured with, and
// none of the system's roots. An unreadable certFile is an error.
func ProbeTLS(ctx context.Context, addr, certFile string) error {
	cfg, err := trustOnly(certFile)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	defer client.CloseIdleConnections()
	return probe(ctx, "https", addr, client)
}

// trustOnly is a client TLS configuration that accepts a server whose chain
// leads to a certificate in certFile, whatever its host names.
func trustOnly(certFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("TLS_CERT_FILE: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("TLS_CERT_FILE %s: no PEM certificate in it", certFile)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Go's own verification would also match the host name, which a
		// loopback probe cannot; VerifyConnection does the rest of it.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		},
	}, nil
}

// probe GETs scheme://addr/healthz with client (see Probe).
func probe(ctx context.Context, scheme, addr string, client *http.Client) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("healthcheck: want host:port, got %q", addr)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	if listener.Inherited(addr) {
		return fmt.Errorf("healthcheck: %s is a socket passed down by a parent process, not an address to probe", addr)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := scheme + "://" + net.JoinHostPort(host, port) + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %d", url, resp.StatusCode)
	}
	return nil
}
