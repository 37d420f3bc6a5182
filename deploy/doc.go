// Package deploy holds onceflow's Kubernetes manifests: a kustomize base, the
// KEDA and monitoring components and the local and production overlays; the
// Grafana dashboard; the SQS queues and IAM policies (sqs/queues.yaml). It has
// no code; its tests render every overlay in-process and check the invariants
// the services rely on (probes, draining, least privilege, scaling, network
// policy), the dashboard's queries and the queues.
package deploy

//go:generate go run ./internal/promrule prometheus/alerts.yaml components/monitoring/prometheusrule.yaml
