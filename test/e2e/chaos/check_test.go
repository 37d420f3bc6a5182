package chaos

import (
	"testing"

	"github.com/onceflow/onceflow/test/e2e/stack"
)

func doc(source, kind string, typ, status int, injected bool) stack.Document {
	return stack.Document{Reference: source, Type: typ, Status: status, Addendum: "onceflow " + source + " " + kind, Injected: injected}
}

func TestCheck(t *testing.T) {
	sources := []Source{{"payment:p1", 101}, {"payment:p2", 111}, {"refund:r1", 102}}
	good := []stack.Document{
		doc("payment p1", "invoice", 101, 5, false),
		doc("payment p2", "invoice", 111, 5, false),
		doc("refund r1", "credit_note", 102, 5, false),
	}
	tests := []struct {
		name                          string
		docs                          []stack.Document
		duplicates, missing, problems int
		injected                      int
	}{
		{"exactly right", good, 0, 0, 0, 0},
		{"a second document", append(good[:3:3], doc("payment p1", "invoice", 101, 5, false)), 1, 0, 1, 0},
		{"an injected duplicate is not onceflow's", append(good[:3:3], doc("payment p1", "invoice", 101, 5, true)), 0, 0, 0, 1},
		{"one missing", good[1:], 0, 1, 1, 0},
		{"wrong type and not final", []stack.Document{good[0], doc("payment p2", "invoice", 101, 4, false), good[2]}, 0, 0, 2, 0},
		{"a document nobody asked for", append(good[:3:3], doc("payment p9", "invoice", 101, 5, false)), 1, 0, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Check(sources, tc.docs)
			if v.Duplicates != tc.duplicates || v.Missing != tc.missing || len(v.Problems) != tc.problems || v.Injected != tc.injected {
				t.Fatalf("verdict = %+v, want duplicates=%d missing=%d problems=%d injected=%d", v, tc.duplicates, tc.missing, tc.problems, tc.injected)
			}
		})
	}
}
