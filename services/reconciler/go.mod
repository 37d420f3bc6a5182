module github.com/onceflow/onceflow/services/reconciler

go 1.26

require github.com/onceflow/onceflow/pkg v0.0.0

replace github.com/onceflow/onceflow/pkg => ../../pkg
