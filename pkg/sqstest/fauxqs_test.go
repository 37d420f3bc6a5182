package sqstest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/onceflow/onceflow/pkg/sqstest"
)

func TestFauxqsStopsAndRestartsOnItsPort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := sqstest.StartFauxqs(t)
	c := f.Client()
	list := func() error {
		_, err := c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)}, func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
		return err
	}
	if err := list(); err != nil {
		t.Fatalf("ListQueues on a started server: %v", err)
	}
	f.Stop()
	if err := list(); err == nil {
		t.Fatal("ListQueues on a stopped server succeeded")
	}
	f.Start()
	if err := list(); err != nil {
		t.Fatalf("ListQueues after a restart on %s: %v", f.Endpoint(), err)
	}
}
