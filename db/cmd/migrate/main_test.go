package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/pkg/pgtest"
)

func TestRunWithRolesMigratesThenGrants(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	env := map[string]string{"DATABASE_URL": dsn}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-roles"}, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "migrated reconciler\napplied roles\n") {
		t.Errorf("output %q, want every schema migrated, then the roles applied", out.String())
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var canInsert bool
	err = conn.QueryRow(t.Context(), `SELECT has_table_privilege('onceflow_ingest', 'ingest.webhook_receipts', 'INSERT')`).Scan(&canInsert)
	if err != nil {
		t.Fatal(err)
	}
	if !canInsert {
		t.Error("onceflow_ingest cannot insert receipts after migrate -roles")
	}
}

func TestRunRefusesBadInvocations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no DATABASE_URL", nil, map[string]string{}, "DATABASE_URL"},
		{"stray argument", []string{"roles"}, map[string]string{"DATABASE_URL": "postgres://x"}, "unexpected arguments"},
		{"unknown flag", []string{"-role"}, map[string]string{"DATABASE_URL": "postgres://x"}, "-role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := run(t.Context(), tt.args, func(k string) string { return tt.env[k] }, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

func TestPasswordsReadsOneVariablePerSchema(t *testing.T) {
	t.Parallel()
	env := map[string]string{"RELAY_DB_PASSWORD": "r", "RECONCILER_DB_PASSWORD": "c", "INGEST_DB_PASSWORD": ""}
	got := passwords(func(k string) string { return env[k] })
	if len(got) != 2 || got["relay"] != "r" || got["reconciler"] != "c" {
		t.Errorf("passwords = %v, want relay and reconciler only", got)
	}
}
