package sqstest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/onceflow/onceflow/pkg/fauxqs"
	"github.com/onceflow/onceflow/pkg/sqsclient"
)

// Fauxqs is a private fauxqs server for tests that stop and restart SQS.
type Fauxqs struct {
	tb  testing.TB
	srv *fauxqs.Server
}

// StartFauxqs starts fauxqs on a free loopback port and stops it when the
// test ends. The test fails, saying how to install it, when it is missing.
func StartFauxqs(tb testing.TB) *Fauxqs {
	tb.Helper()
	dir, err := fauxqs.LocalstackDir()
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := fauxqs.New(dir)
	if err != nil {
		tb.Fatal(err)
	}
	f := &Fauxqs{tb: tb, srv: srv}
	tb.Cleanup(srv.Stop)
	f.Start()
	return f
}

// Endpoint is the server's URL, the value for AWS_ENDPOINT_URL_SQS.
func (f *Fauxqs) Endpoint() string { return f.srv.Endpoint() }

// Client returns an SQS client for this server.
func (f *Fauxqs) Client() *sqs.Client {
	f.tb.Helper()
	c, err := sqsclient.NewClient(context.Background(), "us-east-1", f.Endpoint())
	if err != nil {
		f.tb.Fatalf("sqs client: %v", err)
	}
	return c
}

// Start runs the server on its port and waits until it answers.
func (f *Fauxqs) Start() {
	f.tb.Helper()
	if err := f.srv.Start(); err != nil {
		f.tb.Fatal(err)
	}
}

// Stop kills the server; its port refuses connections afterwards.
func (f *Fauxqs) Stop() { f.srv.Stop() }
