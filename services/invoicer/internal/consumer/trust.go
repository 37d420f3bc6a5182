package consumer

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/msgauth"
)

// OutcomeUntrusted labels a message refused for its signature: it is left
// in the queue, never handled, and reaches the dead-letter queue through the
// redrive policy.
const OutcomeUntrusted = "untrusted"

// ReasonUnsignedAccepted labels an unsigned message handled anyway because
// Trust.AcceptUnsigned is set (the rollout mode, docs/security.md).
const ReasonUnsignedAccepted = "unsigned_accepted"

// Trust decides which messages a receiver hands to its handler: those
// signed by a key of Keys (package msgauth). Each queue has its own, so a
// key trusted for provider events cannot vouch for a billing message.
type Trust struct {
	Keys msgauth.Keyset
	// AcceptUnsigned hands on messages that carry no signature at all, for
	// the release in which producers start signing; a message signed by an
	// unknown key or with a wrong signature is refused all the same.
	AcceptUnsigned bool
	// Untrusted counts refused messages by queue and reason, and unsigned
	// ones handled anyway as ReasonUnsignedAccepted (NewUntrustedCounter).
	Untrusted *prometheus.CounterVec
}

// NewUntrustedCounter registers onceflow_invoicer_untrusted_messages_total,
// by queue (a receiver's name) and reason, with every reason of each of
// queues at zero.
func NewUntrustedCounter(reg prometheus.Registerer, queues ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceflow_invoicer_untrusted_messages_total",
		Help: "Messages by queue and reason they are not trusted (unsigned, unknown_key, bad_signature: refused, left for the DLQ; unsigned_accepted: handled in the rollout mode).",
	}, []string{"queue", "reason"})
	for _, q := range queues {
		for _, r := range []string{msgauth.ReasonUnsigned, msgauth.ReasonUnknownKey, msgauth.ReasonBadSignature, ReasonUnsignedAccepted} {
			c.WithLabelValues(q, r)
		}
	}
	reg.MustRegister(c)
	return c
}

// check returns nil when m, received from queue, may be handled, and
// otherwise the refusal. It counts and logs what it refuses, never the body.
func (t *Trust) check(m types.Message, queue string, log *zap.Logger) error {
	err := t.Keys.Verify(aws.ToString(m.Body), m.MessageAttributes)
	var refused *msgauth.Refused
	if !errors.As(err, &refused) {
		return err
	}
	if refused.Reason == msgauth.ReasonUnsigned && t.AcceptUnsigned {
		t.Untrusted.WithLabelValues(queue, ReasonUnsignedAccepted).Inc()
		log.Warn("unsigned message handled in the rollout mode (unsigned accepted)", zap.String("message_id", aws.ToString(m.MessageId)))
		return nil
	}
	t.Untrusted.WithLabelValues(queue, refused.Reason).Inc()
	log.Warn("untrusted message refused and left for the dead-letter queue", zap.String("message_id", aws.ToString(m.MessageId)),
		zap.String("reason", refused.Reason), zap.String("key_id", refused.KeyID))
	return err
}
