package sqsclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/onceflow/onceflow/pkg/sqsclient"
	"github.com/onceflow/onceflow/pkg/sqstest"
)

// A request the SDK sends again is logged: the first ListQueues reaching
// the SQS server through a proxy is answered 503, the SDK's second attempt
// passes, and the log holds one line naming the retry.
func TestRetriesReachTheLog(t *testing.T) {
	t.Parallel()
	sqstest.Client(t) // fails with directions when no SQS server answers
	target, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL_SQS"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var refused atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refused.CompareAndSwap(false, true) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := sqsclient.NewClient(ctx, "us-east-1", srv.URL, sqsclient.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)}); err != nil {
		t.Fatalf("ListQueues through a proxy refusing once: %v", err)
	}
	var lines []string
	for _, e := range logs.FilterMessage("aws sdk").All() {
		lines = append(lines, e.ContextMap()["detail"].(string))
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "retrying request SQS/ListQueues, attempt 2") {
		t.Errorf("SDK lines = %q, want one naming the second attempt of ListQueues", lines)
	}
}
