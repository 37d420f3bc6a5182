// Package provider holds onceflow's adapters to e-invoicing providers:
// fiscal (the provider-neutral document, status and reference rules),
// invoicy (InvoiCy's SOAP web services) and keyedjson (a provider that takes an
// Idempotency-Key and answers a GET by key). The invoicer emits through them
// and the reconciler audits through them.
package provider
