package command_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/command"
	"github.com/onceflow/onceflow/pkg/httpserver"
)

// writeCert writes a self-signed certificate for name (a public host name,
// not 127.0.0.1, as in a container) and its key into dir.
func writeCert(tb testing.TB, dir, name string) (certFile, keyFile string) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return certFile, keyFile
}

// serveTLS runs the services' HTTP server with TLS on a loopback port until
// the test ends and returns its address.
func serveTLS(tb testing.TB, certFile, keyFile string) string {
	tb.Helper()
	srv := httpserver.New(zaptest.NewLogger(tb), httpserver.Addrs{Public: "127.0.0.1:0", Admin: "127.0.0.1:0"}, prometheus.NewRegistry())
	if err := srv.UseTLS(certFile, keyFile); err != nil {
		tb.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	tb.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			tb.Error(err)
		}
		if err := <-done; err != nil {
			tb.Error(err)
		}
	})
	return srv.Addr()
}

// The healthcheck subcommand of a service serving HTTPS (TLS_CERT_FILE set)
// probes over HTTPS and trusts the configured certificate, whose name is
// not the loopback address it dials.
func TestHealthcheckOverTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir, "ingest.onceflow.example")
	addr := serveTLS(t, certFile, keyFile)
	_, port, _ := net.SplitHostPort(addr)

	t.Setenv("TLS_CERT_FILE", certFile)
	t.Setenv("TLS_KEY_FILE", keyFile)
	for _, a := range []string{addr, ":" + port, "0.0.0.0:" + port} {
		t.Setenv("HTTP_ADDR", a)
		if err := command.Healthcheck(context.Background()); err != nil {
			t.Errorf("Healthcheck with HTTP_ADDR %s and TLS_CERT_FILE: %v", a, err)
		}
	}
	if err := command.Run(context.Background(), []string{"healthcheck"}, map[string]command.Func{}); err != nil {
		t.Errorf("the healthcheck subcommand: %v", err)
	}
}

// ProbeTLS trusts the configured certificate only: a server presenting
// another one fails, as does plain HTTP to a TLS port.
func TestProbeTLSTrustsOnlyTheConfiguredCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := writeCert(t, dir, "ingest.onceflow.example")
	otherCert, _ := writeCert(t, dir, "other.onceflow.example")
	addr := serveTLS(t, certFile, keyFile)

	if err := command.ProbeTLS(context.Background(), addr, certFile); err != nil {
		t.Errorf("ProbeTLS with the server's certificate: %v", err)
	}
	if err := command.ProbeTLS(context.Background(), addr, otherCert); err == nil {
		t.Error("ProbeTLS trusting another certificate succeeded")
	}
	if err := command.ProbeTLS(context.Background(), addr, filepath.Join(dir, "missing.crt")); err == nil {
		t.Error("ProbeTLS with a missing certificate file succeeded")
	}
	if err := command.ProbeTLS(context.Background(), addr, keyFile); err == nil {
		t.Error("ProbeTLS with a file holding no certificate succeeded")
	}
	if err := command.Probe(context.Background(), addr); err == nil {
		t.Error("plain-HTTP Probe of a TLS port succeeded")
	}
}
