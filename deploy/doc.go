// Package deploy holds onceflow's Kubernetes manifests: a kustomize base, the
// KEDA component and the local and production overlays. It has no code; its
// tests render every overlay in-process and check the invariants the services
// rely on (probes, draining, least privilege, scaling, network policy).
package deploy
