// Package openapi holds the services' HTTP contracts: one OpenAPI 3.1
// document per service (<service>.yaml beside this file) describing its
// public and admin routes, each tagged with the port that serves it
// (docs/ports.md). Every service serves its document at
// /admin/openapi.yaml; package openapitest checks, in the services' tests,
// that every registered route is in it and that the component tests'
// requests and responses validate against it.
package openapi

import (
	"embed"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
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

// Serve adds GET /openapi.yaml, answering service's document, to g (the
// guarded /admin group).
func Serve(g *echo.Group, service string) {
	doc := Document(service)
	g.GET("/openapi.yaml", func(c echo.Context) error {
		return c.Blob(http.StatusOK, "application/yaml", doc)
	})
}
