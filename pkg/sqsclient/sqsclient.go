// Package sqsclient builds the Amazon SQS client every service uses and resolves
// queue names to URLs. One binary talks to AWS, LocalStack or fauxqs: only the
// endpoint changes.
package sqsclient

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/logging"
	"go.uber.org/zap"
)

// NewClient returns an SQS client for region. A non-empty endpoint (from
// AWS_ENDPOINT_URL_SQS) points it at an emulator; when an endpoint is set and
// no credentials are in the environment, emulator credentials are used, since
// emulators accept any. Request bodies are sent from memory (bodyInMemory).
// opts adjust the client, e.g. WithLogger.
func NewClient(ctx context.Context, region, endpoint string, opts ...func(*sqs.Options)) (*sqs.Client, error) {
	load := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(region)}
	if endpoint != "" && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		load = append(load, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	return sqs.NewFromConfig(cfg, append([]func(*sqs.Options){func(o *sqs.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.HTTPClient = bodyInMemory{next: o.HTTPClient}
	}}, opts...)...), nil
}

// WithLogger sends the SDK's own log lines to log, as "aws sdk" lines with
// the SDK's words in detail: its warnings, and one line each time it sends a
// request again. The SDK retries a failed call on its own, so without them
// a retried ReceiveMessage is invisible, though the messages of an answer it
// lost on the way stay hidden for the visibility timeout. No line carries a
// message body or an attribute.
func WithLogger(log *zap.Logger) func(*sqs.Options) {
	return func(o *sqs.Options) {
		o.ClientLogMode |= aws.LogRetries
		o.Logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			detail := zap.String("detail", fmt.Sprintf(format, v...))
			if c == logging.Warn {
				log.Warn("aws sdk", detail)
				return
			}
			log.Info("aws sdk", detail)
		})
	}
}

// QueueURL resolves a queue name to its URL; a value that already is a URL is
// returned unchanged.
func QueueURL(ctx context.Context, c *sqs.Client, nameOrURL string) (string, error) {
	if strings.HasPrefix(nameOrURL, "http://") || strings.HasPrefix(nameOrURL, "https://") {
		return nameOrURL, nil
	}
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(nameOrURL)})
	if err != nil {
		return "", fmt.Errorf("queue %q: %w", nameOrURL, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// EnsureQueue creates name with a dead-letter queue name+"-dlq" that receives
// a message after maxReceive receives, and returns the main queue's URL.
// CreateQueue is idempotent for identical attributes.
func EnsureQueue(ctx context.Context, c *sqs.Client, name string, maxReceive int) (string, error) {
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})
	if err != nil {
		return "", fmt.Errorf("create queue %s-dlq: %w", name, err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("queue %s-dlq arn: %w", name, err)
	}
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`,
		attrs.Attributes[string(types.QueueAttributeNameQueueArn)], maxReceive)
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(name),
		Attributes: map[string]string{string(types.QueueAttributeNameRedrivePolicy): redrive},
	})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(q.QueueUrl), nil
}
