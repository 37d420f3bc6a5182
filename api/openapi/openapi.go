// Package openapi holds the services' HTTP contracts: one OpenAPI 3.1
// document per service (<service>.yaml beside this file) describing its
// public and admin routes, each tagged with the port that serves it
// (docs/ports.md). Every service serves its document at
// /admin/openapi.yaml, and ingest the public part at /v1/openapi.yaml; package openapitest checks, in the services' tests,
// that every registered route is in it and that the component tests'
// requests and responses validate against it.
package openapi

import (
	"embed"
	"fmt"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
	"go.yaml.in/yaml/v3"
)

//go:embed *.yaml
var files embed.FS

// Services are the services with a document.
var Services = []string{"ingest", "relay", "invoicer", "reconciler"}

// Document returns service's OpenAPI document; it panics for a service
// without one, a programming error the tests catch.
func Document(service string) []byte {
	b, err := files.ReadFile(service + ".yaml")
	if err != nil {
		panic(fmt.Sprintf("openapi: no document for %q", service))
	}
	return b
}

// Public returns service's document cut to the operations tagged public:
// what its public port serves, with nothing of the admin port's.
func Public(service string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(Document(service), &doc); err != nil {
		return nil, fmt.Errorf("openapi %s: %w", service, err)
	}
	paths := mapValue(doc.Content[0], "paths")
	if paths == nil {
		return nil, fmt.Errorf("openapi %s: no paths", service)
	}
	var kept []*yaml.Node
	for i := 0; i+1 < len(paths.Content); i += 2 {
		if item := publicOnly(paths.Content[i+1]); len(item.Content) > 0 {
			kept = append(kept, paths.Content[i], item)
		}
	}
	paths.Content = kept
	return yaml.Marshal(&doc)
}

// publicOnly keeps the path item's operations tagged public (and its
// other keys, such as parameters, when one is kept).
func publicOnly(item *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode}
	ops := 0
	for i := 0; i+1 < len(item.Content); i += 2 {
		key, val := item.Content[i], item.Content[i+1]
		if !httpMethods[key.Value] {
			out.Content = append(out.Content, key, val)
			continue
		}
		if tags := mapValue(val, "tags"); tags != nil && slices.ContainsFunc(tags.Content, func(t *yaml.Node) bool { return t.Value == "public" }) {
			out.Content = append(out.Content, key, val)
			ops++
		}
	}
	if ops == 0 {
		out.Content = nil
	}
	return out
}

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true, "patch": true, "trace": true}

// mapValue is the value of key in mapping node m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; m != nil && m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// ServePublic adds GET /v1/openapi.yaml, answering the public part of
// service's document (Public), to e, the public port.
func ServePublic(e *echo.Echo, service string) error {
	doc, err := Public(service)
	if err != nil {
		return err
	}
	e.GET("/v1/openapi.yaml", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/yaml", doc)
	})
	return nil
}

// Serve adds GET /openapi.yaml, answering service's document, to g (the
// guarded /admin group).
func Serve(g *echo.Group, service string) {
	doc := Document(service)
	g.GET("/openapi.yaml", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/yaml", doc)
	})
}
