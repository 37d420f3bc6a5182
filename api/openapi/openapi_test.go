package openapi

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The public document keeps the public operations, and nothing of the
// admin port's: no /admin path, no /metrics.
func TestPublicKeepsOnlyPublicOperations(t *testing.T) {
	b, err := Public("ingest")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi %q, want 3.1", doc.OpenAPI)
	}
	for _, want := range []string{"/v1/orders", "/v1/customers/{id}", "/webhooks/{source}", "/healthz", "/readyz", "/v1/openapi.yaml"} {
		if _, ok := doc.Paths[want]; !ok {
			t.Errorf("public document lacks %s", want)
		}
	}
	for path := range doc.Paths {
		if strings.HasPrefix(path, "/admin") || path == "/metrics" {
			t.Errorf("public document shows the admin port's %s", path)
		}
	}
	if _, ok := doc.Paths["/v1/orders/{id}"]["patch"]; !ok {
		t.Error("public document lost PATCH /v1/orders/{id}")
	}
}
