module github.com/onceflow/onceflow/sandbox

go 1.26.0

require (
	github.com/google/uuid v1.6.0
	github.com/onceflow/onceflow/pkg v0.0.0
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
	go.uber.org/zap v1.28.0
)

require go.uber.org/multierr v1.11.0 // indirect

replace github.com/onceflow/onceflow/pkg => ../pkg
