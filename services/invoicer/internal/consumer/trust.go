package consumer

// OutcomeUntrusted labels a message refused for its signature
// (msgauth.Trust): it is left in the queue, never handled, and reaches the
// dead-letter queue through the redrive policy.
const OutcomeUntrusted = "untrusted"
