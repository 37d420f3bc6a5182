package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

// BenchmarkConsoleBoard1M seeds 1,000,000 fiscal documents (999,000
// authorized, 1,000 in needs_attention), analyzes the table as autovacuum
// would, and measures the console's whole board page: every service's
// admin board endpoint, the relay's outboxes and leaders and the SQS
// depths, rendered. It prints the median and worst load time.
//
//	go test -run '^$' -bench BenchmarkConsoleBoard1M -benchtime 20x ./test/e2e/
func BenchmarkConsoleBoard1M(b *testing.B) {
	ctx := context.Background()
	s, err := stack.StartWith(ctx, b.TempDir(), stack.Options{Reconciler: true, Console: true,
		Env: []string{"CONSOLE_USERS_FILE=" + usersFileTB(b), "RECONCILER_AUDIT=off"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	seedStart := time.Now()
	if err := seedDocuments(ctx, s.Database, 1_000_000); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded 1,000,000 documents in %s", time.Since(seedStart).Round(time.Second))
	client := signedIn(b, s)
	board := func() time.Duration {
		start := time.Now()
		resp, err := client.Get(s.ConsoleURL + "/")
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// needs_attention is counted exactly; authorized, on a table this
		// size, is the planner's estimate (marked ~).
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `data-figure="documents.needs_attention">1000<`) ||
			!strings.Contains(string(body), `data-figure="documents.authorized">~`) {
			b.Fatalf("board answered %d without the seeded figures:\n%s", resp.StatusCode, body)
		}
		return time.Since(start)
	}
	board() // warm the connections and caches once
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		took = append(took, board())
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms/board-median")
	fmt.Printf("console board with 1,000,000 documents: median %s, worst %s over %d loads\n",
		took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), len(took))
}

// seedDocuments inserts n documents straight into the invoicer's table,
// all issued long ago (outside any audit period), the last 1,000 parked in
// needs_attention, then analyzes the table.
func seedDocuments(ctx context.Context, dsn string, n int) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `INSERT INTO invoicer.fiscal_documents
  (source_kind, source_ref, kind, event_key, reference, cfe_type, status, amount_minor, currency, buyer,
   provider_series, provider_number, issue_date, due_at, created_at, updated_at)
SELECT 'payment', 'seed-' || i, 'invoice', 'payment:seed-' || i || ':paid', (900000000000 + i)::text, 101,
       CASE WHEN i > $1 - 1000 THEN 'needs_attention' ELSE 'authorized' END, 10000, 'UYU', '{}'::jsonb,
       'S', i, DATE '2020-01-01', TIMESTAMPTZ '2020-01-01', TIMESTAMPTZ '2020-01-01', TIMESTAMPTZ '2020-01-01'
FROM generate_series(1, $1) AS i`, n)
	if err != nil {
		return fmt.Errorf("seed documents: %w", err)
	}
	_, err = conn.Exec(ctx, `ANALYZE invoicer.fiscal_documents`)
	return err
}

// signedIn returns a client signed in to the console as ana.
func signedIn(tb testing.TB, s *stack.Stack) *http.Client {
	tb.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := c.Get(s.ConsoleURL + "/login")
	if err != nil {
		tb.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(page)
	if m == nil {
		tb.Fatalf("no CSRF token on the sign-in page:\n%s", page)
	}
	resp, err = c.PostForm(s.ConsoleURL+"/login", url.Values{"_csrf": {string(m[1])}, "login": {"ana"}, "password": {"ana-secret"}})
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
		tb.Fatalf("sign in: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	return c
}
