package app_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onceflow/onceflow/api/openapi/openapitest"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths with a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ingest test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}

func TestWebhookOverHTTPS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, roots := selfSigned(t)
	e := start(t, "TLS_CERT_FILE", certFile, "TLS_KEY_FILE", keyFile)
	if !strings.HasPrefix(e.ingest, "https://") {
		t.Fatalf("ingest at %s, want https", e.ingest)
	}
	e.client = openapitest.Client(t, "ingest", &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
		strings.TrimPrefix(e.ingest, "https://"), strings.TrimPrefix(e.admin, "https://"))
	body := []byte(`{"id":"D-4-tls","status":"PENDING"}`)
	if code, got := e.deliver("dlocal", body, dlocalSigned(body, secret, time.Now())); code != http.StatusOK || !strings.Contains(got, "accepted") {
		t.Fatalf("webhook over HTTPS: %d %s", code, got)
	}
	if n := e.count("SELECT count(*) FROM ingest.webhook_receipts WHERE event_id = 'D-4-tls'"); n != 1 {
		t.Fatalf("receipts = %d, want 1", n)
	}
	// Plain HTTP to the TLS port gets no answer a client could mistake for success.
	resp, err := http.Get("http://" + strings.TrimPrefix(e.ingest, "https://") + "/healthz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP was served on the TLS port")
		}
	}
}
