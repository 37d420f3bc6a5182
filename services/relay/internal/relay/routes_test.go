package relay

import (
	"strings"
	"testing"

	"github.com/onceflow/onceflow/pkg/outbox"
)

func TestParseRoutes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []Outbox
		wantErr string
	}{
		{
			name: "default shape",
			in:   "ingest.outbox=billing.>onceflow-billing,provider.>onceflow-provider-events;invoicer.outbox=notification.>onceflow-notifications",
			want: []Outbox{
				{Table: outbox.Table{Schema: "ingest", Name: "outbox"}, Routes: []Route{{"billing.", "onceflow-billing"}, {"provider.", "onceflow-provider-events"}}},
				{Table: outbox.Table{Schema: "invoicer", Name: "outbox"}, Routes: []Route{{"notification.", "onceflow-notifications"}}},
			},
		},
		{
			name: "queue URL and spaces",
			in:   " ingest.outbox = billing.>http://127.0.0.1:4566/000000000000/q ; ",
			want: []Outbox{{Table: outbox.Table{Schema: "ingest", Name: "outbox"}, Routes: []Route{{"billing.", "http://127.0.0.1:4566/000000000000/q"}}}},
		},
		{name: "empty", in: " ; ", wantErr: "at least one outbox"},
		{name: "no equals", in: "ingest.outbox", wantErr: "want schema.table="},
		{name: "no schema", in: "outbox=a>q", wantErr: "want schema.table"},
		{name: "bad identifier", in: `ingest.Out"box=a>q`, wantErr: "want schema.table"},
		{name: "no prefix", in: "ingest.outbox=>q", wantErr: "want eventTypePrefix>queueNameOrURL"},
		{name: "no queue", in: "ingest.outbox=billing.", wantErr: "want eventTypePrefix>queueNameOrURL"},
		{name: "twice", in: "ingest.outbox=a>q;ingest.outbox=b>q", wantErr: "listed twice"},
		{name: "prefix twice", in: "ingest.outbox=a>q,a>r", wantErr: "routed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseRoutes(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRoutes(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRoutes(%q): %v", tt.in, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseRoutes(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i].Table != tt.want[i].Table || !equalRoutes(got[i].Routes, tt.want[i].Routes) {
					t.Errorf("outbox %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func equalRoutes(a, b []Route) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMatchPrefersLongestPrefix(t *testing.T) {
	t.Parallel()
	ob := Outbox{Routes: []Route{{"billing.", "all"}, {"billing.refund", "refunds"}}}
	for typ, want := range map[string]string{"billing.document_requested": "all", "billing.refund_done": "refunds", "other": ""} {
		r, ok := ob.Match(typ)
		if r.Queue != want || ok != (want != "") {
			t.Errorf("Match(%q) = %q, %v; want %q", typ, r.Queue, ok, want)
		}
	}
}

func TestSplitRespectsCountAndSize(t *testing.T) {
	t.Parallel()
	r := &Relay{s: Settings{MaxBatchBytes: 2048}}
	var rows []outbox.Row
	for i := range 25 {
		rows = append(rows, outbox.Row{ID: int64(i), EventKey: "k", EventType: "t", Payload: make([]byte, 100)})
	}
	big := outbox.Row{ID: 99, EventKey: "k", EventType: "t", Payload: make([]byte, 1400)} // a body of 1,868 bytes
	rows = append(rows[:12], append([]outbox.Row{big}, rows[12:]...)...)
	msgs := make([]envelope, len(rows))
	for i, row := range rows {
		msgs[i] = r.envelope(row)
	}
	chunks := r.split("q", msgs)
	total := 0
	for _, c := range chunks {
		size := 0
		for _, m := range c.msgs {
			size += m.size
		}
		if len(c.msgs) > entriesPerCall || size > 2048 {
			t.Errorf("chunk of %d messages and %d bytes breaks the SQS limits", len(c.msgs), size)
		}
		total += len(c.msgs)
	}
	if total != len(rows) {
		t.Errorf("chunks hold %d rows, want %d", total, len(rows))
	}
}
