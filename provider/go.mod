module github.com/onceflow/onceflow/provider

go 1.26.0

require (
	github.com/onceflow/onceflow/pkg v0.0.0
	github.com/onceflow/onceflow/sandbox v0.0.0
	golang.org/x/time v0.16.0
)

require (
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
)

replace (
	github.com/onceflow/onceflow/pkg => ../pkg
	github.com/onceflow/onceflow/sandbox => ../sandbox
)
