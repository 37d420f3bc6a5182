// Package ctl is onceflowctl: one command line over the services' operator
// endpoints (/admin/...), with the admin token from the environment. Every
// command prints a table for people, or the services' JSON with --json, and
// exits with a code scripts can rely on (see Exit*).
package ctl

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// options are the settings every command shares.
type options struct {
	json                                bool
	ingest, relay, invoicer, reconciler string
	token                               string
	out                                 io.Writer
	http                                *http.Client
}

// NewRoot returns the onceflowctl command, writing to out and reading its
// defaults through getenv.
func NewRoot(out io.Writer, getenv func(string) string) *cobra.Command {
	o := &options{out: out, http: &http.Client{Timeout: 30 * time.Second}}
	root := &cobra.Command{
		Use:   "onceflowctl",
		Short: "Operate onceflow: pipeline status, parked work, needs-attention documents, audits",
		Long: `onceflowctl calls the services' operator endpoints with the admin token
(ONCEFLOW_ADMIN_TOKEN, or ADMIN_TOKEN). Exit codes: 0 done, 1 a service refused
or status --check found work for a person, 2 bad command or flag, 3 a service
did not answer.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if o.token == "" {
				return &Error{ExitUsage, fmt.Errorf("no admin token: set ONCEFLOW_ADMIN_TOKEN (or ADMIN_TOKEN)")}
			}
			return nil
		},
	}
	o.token = firstSet(getenv("ONCEFLOW_ADMIN_TOKEN"), getenv("ADMIN_TOKEN"))
	f := root.PersistentFlags()
	f.BoolVar(&o.json, "json", false, "print the services' JSON instead of a table")
	f.StringVar(&o.ingest, "ingest-url", firstSet(getenv("ONCEFLOW_INGEST_URL"), "http://localhost:9090"), "ingest's admin base URL (env ONCEFLOW_INGEST_URL)")
	f.StringVar(&o.relay, "relay-url", firstSet(getenv("ONCEFLOW_RELAY_URL"), "http://localhost:9091"), "the relay's admin base URL (env ONCEFLOW_RELAY_URL)")
	f.StringVar(&o.invoicer, "invoicer-url", firstSet(getenv("ONCEFLOW_INVOICER_URL"), "http://localhost:9092"), "the invoicer's admin base URL (env ONCEFLOW_INVOICER_URL)")
	f.StringVar(&o.reconciler, "reconciler-url", firstSet(getenv("ONCEFLOW_RECONCILER_URL"), "http://localhost:9093"), "the reconciler's admin base URL (env ONCEFLOW_RECONCILER_URL)")
	root.AddCommand(statusCmd(o), receiptsCmd(o), outboxCmd(o), documentsCmd(o), findingsCmd(o), auditCmd(o), casesCmd(o), notificationsCmd(o), revealsCmd(o))
	root.SetOut(out)
	return root
}

func (o *options) client(service string) client {
	base := map[string]string{"ingest": o.ingest, "relay": o.relay, "invoicer": o.invoicer, "reconciler": o.reconciler}[service]
	return client{service: service, base: base, token: o.token, http: o.http}
}

// print writes raw JSON with --json, else the table rows under header.
func (o *options) print(raw any, header string, rows [][]any) error {
	if o.json {
		enc := json.NewEncoder(o.out)
		enc.SetIndent("", "  ")
		return enc.Encode(raw)
	}
	tw := tabwriter.NewWriter(o.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		for i, v := range r {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func firstSet(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}

// since renders how long ago t was, or "-" for none.
func since(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return time.Since(*t).Round(time.Second).String() + " ago"
}
