package msgauth

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// ReasonUnsignedAccepted labels an unsigned message handled anyway because
// Trust.AcceptUnsigned is set (the rollout mode, docs/security.md).
const ReasonUnsignedAccepted = "unsigned_accepted"

// Trust decides which messages a consumer of a queue acts on: those signed
// by a key of Keys. Each queue has its own, so a key trusted on one queue
// cannot vouch for a message on another.
type Trust struct {
	Keys Keyset
	// AcceptUnsigned hands on messages that carry no signature at all, for
	// the release in which producers start signing; a message signed by an
	// unknown key or with a wrong signature is refused all the same.
	AcceptUnsigned bool
	// Untrusted counts refused messages by queue and reason, and unsigned
	// ones handled anyway as ReasonUnsignedAccepted (NewUntrustedCounter).
	Untrusted *prometheus.CounterVec
}

// NewUntrustedCounter registers a consumer's counter of untrusted messages,
// name (onceflow_<service>_untrusted_messages_total), on reg, by queue (the
// consumer's name for it) and reason, with every reason of each of queues
// at zero.
func NewUntrustedCounter(reg prometheus.Registerer, name string, queues ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: name,
		Help: "Messages by queue and reason they are not trusted (unsigned, unknown_key, bad_signature: refused, left for the DLQ; unsigned_accepted: handled in the rollout mode).",
	}, []string{"queue", "reason"})
	for _, q := range queues {
		for _, r := range []string{ReasonUnsigned, ReasonUnknownKey, ReasonBadSignature, ReasonUnsignedAccepted} {
			c.WithLabelValues(q, r)
		}
	}
	reg.MustRegister(c)
	return c
}

// Check returns nil when m, received from queue, may be acted on, and
// otherwise the *Refused. It counts and logs what it refuses, never the
// body; the caller leaves a refused message in the queue, for its
// dead-letter queue.
func (t *Trust) Check(m types.Message, queue string, log *zap.Logger) error {
	err := t.Keys.Verify(aws.ToString(m.Body), m.MessageAttributes)
	var refused *Refused
	if !errors.As(err, &refused) {
		return err
	}
	if refused.Reason == ReasonUnsigned && t.AcceptUnsigned {
		t.Untrusted.WithLabelValues(queue, ReasonUnsignedAccepted).Inc()
		log.Warn("unsigned message handled in the rollout mode (unsigned accepted)", zap.String("message_id", aws.ToString(m.MessageId)))
		return nil
	}
	t.Untrusted.WithLabelValues(queue, refused.Reason).Inc()
	log.Warn("untrusted message refused and left for the dead-letter queue", zap.String("message_id", aws.ToString(m.MessageId)),
		zap.String("reason", refused.Reason), zap.String("key_id", refused.KeyID))
	return err
}

// Setting is what a queue's messages must be signed with, as a service's
// configuration says it: a list of keys (ParseKeyset) and a rollout mode,
// reject or accept, each read from its own variable, named in errors.
type Setting struct {
	KeysVar, Keys string
	ModeVar, Mode string
}

// Validate checks the keys and the mode: with no key, a service may
// consume the queue only when told to accept unsigned messages.
func (s Setting) Validate() error {
	keys, err := ParseKeyset(s.Keys)
	switch {
	case err != nil:
		return errors.New(s.KeysVar + ": " + err.Error())
	case s.Mode != "reject" && s.Mode != "accept":
		return errors.New(s.ModeVar + ": want reject or accept")
	case keys.Len() == 0 && s.Mode == "reject":
		return errors.New(s.KeysVar + ": want the producers' keys (id:secret,... of at least 16 bytes each), " +
			"or " + s.ModeVar + "=accept while producers start signing")
	}
	return nil
}

// Trust is the queue's Trust counting on untrusted, warning on log when it
// trusts every unsigned message; Validate must have passed.
func (s Setting) Trust(untrusted *prometheus.CounterVec, log *zap.Logger) *Trust {
	keys, _ := ParseKeyset(s.Keys)
	if keys.Len() == 0 {
		log.Warn("messages are not authenticated: " + s.ModeVar + "=accept and no " + s.KeysVar)
	}
	return &Trust{Keys: keys, AcceptUnsigned: s.Mode == "accept", Untrusted: untrusted}
}
