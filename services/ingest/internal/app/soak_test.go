package app_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"

	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onceflow/onceflow/db"
	"github.com/onceflow/onceflow/pkg/listener"
	"github.com/onceflow/onceflow/pkg/pgtest"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// BenchmarkSlowUploadSoak is the memory soak of bounded intake: 1,000
// concurrent slow uploads of 1 MiB each against an ingest process (the
// real binary, built here) run with GOMEMLIMIT=256MiB and the default
// INGEST_WEBHOOK_MAX_IN_FLIGHT. Every upload sends its first 64 KiB and
// stalls; the ones past the bound must be answered 503 while the others
// hold their slots; then the held uploads finish and are accepted, a new
// valid delivery is accepted at once, and the ingest process's peak RSS
// (VmHWM) must stay under 256 MiB. Run it with
//
//	go test -run '^$' -bench SlowUploadSoak -benchtime 1x ./services/ingest/internal/app
func BenchmarkSlowUploadSoak(b *testing.B) {
	const uploads, inFlight, limit = 1000, 64, 256 << 20
	e, pid := startIngestProcess(b, "GOMEMLIMIT=256MiB")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1, DisableKeepAlives: true}}
	for b.Loop() {
		busy, accepted := soak(b, e, client, uploads, inFlight)
		b.ReportMetric(float64(busy), "busy_503")
		b.ReportMetric(float64(accepted), "accepted")
	}
	valid := []byte(`{"id":"soak-after"}`)
	if code, _, got := e.postWebhook("plain", valid, plainSigned(valid, plainSecret)); code != http.StatusOK {
		b.Fatalf("after the soak: %d %s, want 200", code, got)
	}
	peak := peakRSS(b, pid)
	b.ReportMetric(float64(peak)/(1<<20), "peak_rss_MiB")
	if peak > limit {
		b.Fatalf("ingest's peak RSS %d MiB over the %d MiB limit", peak>>20, limit>>20)
	}
}

// startIngestProcess builds ingest and runs it as its own process against a
// fresh database with the intake sources, its log on stderr (which TestMain
// checks), and returns an env to drive it and its pid.
func startIngestProcess(tb testing.TB, extraEnv ...string) (*env, int) {
	tb.Helper()
	dir := tb.TempDir()
	bin := filepath.Join(dir, "ingest")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/onceflow/onceflow/services/ingest/cmd/ingest").CombinedOutput(); err != nil {
		tb.Fatalf("build ingest: %v\n%s", err, out)
	}
	sources := filepath.Join(dir, "sources.yaml")
	if err := os.WriteFile(sources, []byte(intakeSources), 0o600); err != nil {
		tb.Fatal(err)
	}
	dsn := pgtest.NewDatabase(tb)
	if err := db.Migrate(context.Background(), dsn, "ingest"); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin)
	public, admin := reserve(tb), reserve(tb)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dsn, "HTTP_ADDR=" + pass(tb, public, cmd), "ADMIN_ADDR=" + pass(tb, admin, cmd), "INGEST_WEBHOOK_SOURCES_FILE=" + sources,
		"DLOCAL_BASE_URL=http://127.0.0.1:1", "DLOCAL_LOGIN=" + login, "DLOCAL_TRANS_KEY=" + transKey, "DLOCAL_SECRET_KEY=" + secret,
		"INGEST_API_TOKEN=" + token, "ADMIN_TOKEN=" + adminToken}, extraEnv...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	err := cmd.Start()
	_, _ = public.Close(), admin.Close() // the child holds the sockets now
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	e := &env{t: tb, client: http.DefaultClient, ingest: "http://" + public.Addr(), admin: "http://" + admin.Addr()}
	testwait.Until(tb, time.Minute, 50*time.Millisecond, "ingest to be ready", func() bool {
		resp, err := http.Get(e.ingest + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return e, cmd.Process.Pid
}

// reserve binds a free loopback port to pass to the ingest process.
func reserve(tb testing.TB) *listener.Reserved {
	tb.Helper()
	r, err := listener.Reserve("127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// pass hands r's socket to cmd and returns the address setting for it.
func pass(tb testing.TB, r *listener.Reserved, cmd *exec.Cmd) string {
	tb.Helper()
	addr, err := r.Pass(cmd)
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

// soak runs one round of slow uploads and returns how many were answered
// 503 and how many accepted.
func soak(b *testing.B, e *env, client *http.Client, uploads, inFlight int) (busy, accepted int64) {
	var nBusy, nAccepted, nOther atomic.Int64
	gate := make(chan struct{})
	var wg sync.WaitGroup
	pad := bytes.Repeat([]byte("x"), 1<<20-128) // shared: the client holds one copy
	for i := range uploads {
		head, tail := []byte(`{"id":"soak-`+strconv.Itoa(i)+`","pad":"`), []byte(`"}`)
		mac := hmac.New(sha256.New, []byte(plainSecret))
		mac.Write(head)
		mac.Write(pad)
		mac.Write(tail)
		r, w := io.Pipe()
		req, _ := http.NewRequest(http.MethodPost, e.ingest+"/webhooks/plain", r)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Signature", hex.EncodeToString(mac.Sum(nil)))
		req.ContentLength = int64(len(head) + len(pad) + len(tail)) // as PSPs send it
		wg.Go(func() {
			_, err := w.Write(head)
			if err == nil {
				_, err = w.Write(pad[:64<<10])
			}
			if err == nil {
				<-gate
				_, _ = w.Write(pad[64<<10:])
				_, _ = w.Write(tail)
			}
			_ = w.Close()
		})
		wg.Go(func() {
			resp, err := client.Do(req)
			switch {
			case err != nil:
				nOther.Add(1)
			case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
				nBusy.Add(1)
			case resp.StatusCode == http.StatusOK:
				nAccepted.Add(1)
			default:
				nOther.Add(1)
			}
			if resp != nil {
				resp.Body.Close()
			}
			_ = r.Close()
		})
	}
	want := int64(uploads - inFlight)
	for deadline := time.Now().Add(2 * time.Minute); nBusy.Load()+nOther.Load() < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(gate)
			b.Fatalf("answered %d busy and %d otherwise of the %d past the bound", nBusy.Load(), nOther.Load(), want)
		}
	}
	close(gate)
	wg.Wait()
	// A client writing its body when the 503 comes may see the connection
	// reset instead of the answer: ingest's own count is the truth.
	busy = receiptsCounted(b, e, "busy")
	if busy != want || nAccepted.Load() != int64(inFlight) {
		b.Fatalf("ingest counted %d busy; clients saw %d busy, %d accepted, %d errors; want %d busy and %d accepted",
			busy, nBusy.Load(), nAccepted.Load(), nOther.Load(), want, inFlight)
	}
	b.ReportMetric(float64(nOther.Load()), "client_resets")
	return busy, nAccepted.Load()
}

// receiptsCounted reads onceflow_ingest_receipts_total for source plain
// and outcome from ingest's /metrics.
func receiptsCounted(tb testing.TB, e *env, outcome string) int64 {
	tb.Helper()
	n, _ := metricValue(tb, e, "onceflow_ingest_receipts_total", "source", "plain", "outcome", outcome)
	return int64(n)
}

// peakRSS is process pid's peak resident set size (VmHWM).
func peakRSS(tb testing.TB, pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	tb.Fatal("no VmHWM in /proc/self/status")
	return 0
}
