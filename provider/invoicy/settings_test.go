package invoicy_test

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/pkg/config"
	"github.com/onceflow/onceflow/provider/invoicy"
)

// withSettings is how a service's config embeds the InvoiCy settings.
type withSettings struct {
	config.Common
	invoicy.Settings
}

func TestSettingsAreReadFromTheInvoiCyVariables(t *testing.T) {
	t.Parallel()
	env := map[string]string{"INVOICY_BASE_URL": "https://invoicy.example/InvoiCy/", "INVOICY_EMP_CODIGO": "SUC",
		"INVOICY_EMP_PK": "PK", "INVOICY_ACCESS_KEY": "KEY"}
	loaded, err := config.LoadFrom[withSettings](func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	s := loaded.Value.Settings
	if !s.Named() || s.Validate() != nil {
		t.Fatalf("settings %+v: named %v, validate %v; want a complete branch", s, s.Named(), s.Validate())
	}
	c := s.Config()
	if c.BaseURL != env["INVOICY_BASE_URL"] || c.EmpCodigo != "SUC" || c.EmpPK != "PK" || c.AccessKey != "KEY" {
		t.Fatalf("Config() = %+v, want the settings' branch", c)
	}
	for _, f := range loaded.Fields() {
		if f.Key == "INVOICY_EMP_PK" || f.Key == "INVOICY_ACCESS_KEY" {
			if f.String != "***" {
				t.Errorf("%s logged as %q, want it masked", f.Key, f.String)
			}
		}
	}
}

func TestSettingsHaveNoDefaults(t *testing.T) {
	t.Parallel()
	loaded, err := config.LoadFrom[withSettings](func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if s := loaded.Value.Settings; s.Named() || s != (invoicy.Settings{}) {
		t.Fatalf("settings %+v from an empty environment, want none: an unset INVOICY_BASE_URL names no InvoiCy", s)
	}
}

func TestSettingsErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	ok := invoicy.Settings{BaseURL: "https://invoicy.example/InvoiCy/", EmpCodigo: "SUC", EmpPK: "PK", AccessKey: "KEY"}
	tests := []struct {
		name string
		edit func(*invoicy.Settings)
	}{
		{"INVOICY_BASE_URL", func(s *invoicy.Settings) { s.BaseURL = "invoicy.example" }},
		{"INVOICY_BASE_URL", func(s *invoicy.Settings) { s.BaseURL = "" }},
		{"INVOICY_EMP_CODIGO", func(s *invoicy.Settings) { s.EmpCodigo = "" }},
		{"INVOICY_EMP_PK", func(s *invoicy.Settings) { s.EmpPK = "" }},
		{"INVOICY_ACCESS_KEY", func(s *invoicy.Settings) { s.AccessKey = " " }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ok
			tt.edit(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tt.name) {
				t.Fatalf("Validate(%+v) = %v, want an error naming %s", s, err, tt.name)
			}
		})
	}
}
