package msgauth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"

	"github.com/onceflow/onceflow/pkg/msgauth"
	"github.com/onceflow/onceflow/pkg/outbox"
)

// TestTrustCountsWhatItRefusesAndWhatTheRolloutAccepts checks a queue's
// Trust from its setting: a message signed by its key passes uncounted; in
// the reject mode an unsigned one is refused and counted as unsigned; in
// the accept mode it passes, counted as unsigned_accepted, while one signed
// by an unknown key is still refused.
func TestTrustCountsWhatItRefusesAndWhatTheRolloutAccepts(t *testing.T) {
	t.Parallel()
	body := `{"event_key":"payment:1:paid"}`
	attrs := outbox.Attributes("billing.payment", "payment:1:paid", "")
	msg := func(key string) types.Message {
		a := attrs
		if key != "" {
			a = mustKey(t, key).Sign(body, attrs)
		}
		return types.Message{MessageId: aws.String("m-1"), Body: aws.String(body), MessageAttributes: a}
	}
	for _, mode := range []string{"reject", "accept"} {
		s := msgauth.Setting{KeysVar: "X_KEYS", Keys: relayKey, ModeVar: "X_UNSIGNED", Mode: mode}
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		c := msgauth.NewUntrustedCounter(prometheus.NewRegistry(), "onceflow_test_untrusted_messages_total", "q")
		trust := s.Trust(c, zaptest.NewLogger(t))
		log := zaptest.NewLogger(t)
		if err := trust.Check(msg(relayKey), "q", log); err != nil {
			t.Errorf("%s: signed by the trusted key: %v", mode, err)
		}
		var refused *msgauth.Refused
		if err := trust.Check(msg(reconKey), "q", log); !errors.As(err, &refused) || refused.Reason != msgauth.ReasonUnknownKey {
			t.Errorf("%s: signed by an unknown key: %v, want refused as unknown_key", mode, err)
		}
		unsigned := trust.Check(msg(""), "q", log)
		want := map[string]float64{msgauth.ReasonUnknownKey: 1, msgauth.ReasonUnsigned: 1, msgauth.ReasonUnsignedAccepted: 0, msgauth.ReasonBadSignature: 0}
		if mode == "accept" {
			want[msgauth.ReasonUnsigned], want[msgauth.ReasonUnsignedAccepted] = 0, 1
			if unsigned != nil {
				t.Errorf("accept: unsigned refused: %v", unsigned)
			}
		} else if !errors.As(unsigned, &refused) || refused.Reason != msgauth.ReasonUnsigned {
			t.Errorf("reject: unsigned: %v, want refused as unsigned", unsigned)
		}
		for reason, n := range want {
			if got := testutil.ToFloat64(c.WithLabelValues("q", reason)); got != n {
				t.Errorf("%s: %s counted %v, want %v", mode, reason, got, n)
			}
		}
	}
}

// TestSettingNamesTheVariableAndNeedsKeysUnlessAccepting checks a setting
// with no key is valid only in the accept mode, and errors name the
// variable.
func TestSettingNamesTheVariableAndNeedsKeysUnlessAccepting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		keys, mode, want string
	}{
		{"", "reject", "X_KEYS"},
		{"", "accept", ""},
		{relayKey, "maybe", "X_UNSIGNED"},
		{"relay-1:short", "accept", "X_KEYS"},
		{relayKey + "," + reconKey, "reject", ""},
	} {
		err := msgauth.Setting{KeysVar: "X_KEYS", Keys: c.keys, ModeVar: "X_UNSIGNED", Mode: c.mode}.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %s: %v, want no error", c.keys, c.mode, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%q %s: %v, want an error naming %s", c.keys, c.mode, err, c.want)
		}
	}
}
