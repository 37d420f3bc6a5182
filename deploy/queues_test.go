package deploy

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// cfnTemplate is the part of deploy/sqs/queues.yaml the tests read.
type cfnTemplate struct {
	Resources map[string]struct {
		Type       string         `json:"Type"`
		Properties map[string]any `json:"Properties"`
	} `json:"Resources"`
}

// queueDef is one queue as any of the three definitions declares it.
type queueDef struct {
	Name        string
	DLQ         string // the dead-letter queue's name, "" for a DLQ itself
	MaxReceive  int
	Visibility  int
	Retention   int
	Encrypted   bool
	logicalName string
}

// wantAccess is who may do what: the least privilege each service needs,
// read from the code (ingest's notifications receiver, relay routes, the invoicer's consumers and KEDA
// trigger, the reconciler's dead-letter gauge, the console's board of queue
// depths; the reconciler and the console send nothing).
var wantAccess = map[string]map[string][]string{
	"IngestPolicy": {"sqs:GetQueueUrl": {"onceflow-notifications"}, "sqs:ReceiveMessage": {"onceflow-notifications"},
		"sqs:DeleteMessage": {"onceflow-notifications"}},
	"RelayPolicy": {"sqs:GetQueueUrl": {"onceflow-billing", "onceflow-notifications", "onceflow-provider-events"},
		"sqs:SendMessage": {"onceflow-billing", "onceflow-notifications", "onceflow-provider-events"}},
	"InvoicerPolicy": {"sqs:GetQueueUrl": {"onceflow-billing", "onceflow-provider-events"},
		"sqs:ReceiveMessage": {"onceflow-billing", "onceflow-provider-events"}, "sqs:DeleteMessage": {"onceflow-billing", "onceflow-provider-events"},
		"sqs:ChangeMessageVisibility": {"onceflow-billing", "onceflow-provider-events"}, "sqs:GetQueueAttributes": {"onceflow-billing"}},
	"ReconcilerPolicy": {"sqs:GetQueueUrl": {"onceflow-billing-dlq", "onceflow-notifications-dlq", "onceflow-provider-events-dlq"},
		"sqs:GetQueueAttributes": {"onceflow-billing-dlq", "onceflow-notifications-dlq", "onceflow-provider-events-dlq"}},
	"ConsolePolicy": {"sqs:GetQueueUrl": allQueues, "sqs:GetQueueAttributes": allQueues},
}

// allQueues are the three queues and their dead-letter queues, the
// console's default CONSOLE_QUEUES with each one's -dlq.
var allQueues = []string{"onceflow-billing", "onceflow-billing-dlq", "onceflow-notifications", "onceflow-notifications-dlq",
	"onceflow-provider-events", "onceflow-provider-events-dlq"}

func loadTemplate(t *testing.T) cfnTemplate {
	t.Helper()
	var tpl cfnTemplate
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "deploy/sqs/queues.yaml")), &tpl); err != nil {
		t.Fatalf("parse deploy/sqs/queues.yaml: %v", err)
	}
	return tpl
}

// getAtt returns the logical id of {Fn::GetAtt: [id, Arn]}, or an error.
func getAtt(v any) (string, error) {
	m, _ := v.(map[string]any)
	ref, _ := m["Fn::GetAtt"].([]any)
	if len(ref) != 2 || ref[1] != "Arn" {
		return "", fmt.Errorf("%v is not Fn::GetAtt [<queue>, Arn]", v)
	}
	id, _ := ref[0].(string)
	return id, nil
}

func number(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case string:
		i, _ := strconv.Atoi(n)
		return i
	}
	return 0
}

// templateQueues returns the template's queues by name.
func templateQueues(t *testing.T, tpl cfnTemplate) map[string]queueDef {
	t.Helper()
	byID := map[string]string{}
	for id, r := range tpl.Resources {
		if r.Type == "AWS::SQS::Queue" {
			byID[id], _ = r.Properties["QueueName"].(string)
		}
	}
	out := map[string]queueDef{}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::SQS::Queue" {
			continue
		}
		p := r.Properties
		q := queueDef{Name: byID[id], logicalName: id, Visibility: 30, Retention: number(p["MessageRetentionPeriod"]),
			Encrypted: p["SqsManagedSseEnabled"] == true || p["KmsMasterKeyId"] != nil}
		if v, ok := p["VisibilityTimeout"]; ok {
			q.Visibility = number(v)
		}
		if rp, ok := p["RedrivePolicy"].(map[string]any); ok {
			dlq, err := getAtt(rp["deadLetterTargetArn"])
			if err != nil || byID[dlq] == "" {
				t.Errorf("%s: redrive target: %v", id, err)
			}
			q.DLQ, q.MaxReceive = byID[dlq], number(rp["maxReceiveCount"])
		}
		out[q.Name] = q
	}
	return out
}

// Every main queue has a dead-letter queue with a redrive count, a visibility
// the invoicer's default fits in, a retention; every queue is encrypted; and
// each service's policy names only its queues and its actions.
func TestQueuesTemplate(t *testing.T) {
	tpl := loadTemplate(t)
	queues := templateQueues(t, tpl)
	mains := 0
	for name, q := range queues {
		if !q.Encrypted || q.Retention == 0 || q.Name == "" {
			t.Errorf("%s: want a name, a retention and server-side encryption: %+v", q.logicalName, q)
		}
		if strings.HasSuffix(name, "-dlq") {
			if q.DLQ != "" {
				t.Errorf("%s: a dead-letter queue with its own redrive", name)
			}
			continue
		}
		mains++
		if q.DLQ != name+"-dlq" || q.MaxReceive < 1 {
			t.Errorf("%s: want redrive to %s-dlq after maxReceiveCount ≥ 1, have %q after %d", name, name, q.DLQ, q.MaxReceive)
		}
		if dlq, ok := queues[q.DLQ]; ok && dlq.Retention <= q.Retention {
			t.Errorf("%s: its DLQ keeps messages %ds, not longer than the queue's %ds", name, dlq.Retention, q.Retention)
		}
	}
	if mains != 3 {
		t.Errorf("%d main queues, want billing, provider events and notifications", mains)
	}
	for id, want := range wantAccess {
		if have := policyAccess(t, tpl, id); !equalAccess(have, want) {
			t.Errorf("%s grants %v, want exactly %v", id, have, want)
		}
	}
}

// policyAccess returns a managed policy's grants: action → queue names.
func policyAccess(t *testing.T, tpl cfnTemplate, id string) map[string][]string {
	t.Helper()
	r, ok := tpl.Resources[id]
	if !ok || r.Type != "AWS::IAM::ManagedPolicy" || r.Properties["Roles"] == nil {
		t.Errorf("%s: no AWS::IAM::ManagedPolicy attached to a role", id)
		return nil
	}
	names := map[string]string{}
	for qid, q := range tpl.Resources {
		if q.Type == "AWS::SQS::Queue" {
			names[qid], _ = q.Properties["QueueName"].(string)
		}
	}
	out := map[string][]string{}
	doc, _ := r.Properties["PolicyDocument"].(map[string]any)
	stmts, _ := doc["Statement"].([]any)
	for _, s := range stmts {
		st, _ := s.(map[string]any)
		if st["Effect"] != "Allow" {
			t.Errorf("%s: statement %v is not an Allow", id, st["Sid"])
		}
		actions, _ := st["Action"].([]any)
		resources, _ := st["Resource"].([]any)
		for _, a := range actions {
			for _, res := range resources {
				q, err := getAtt(res)
				if err != nil || names[q] == "" {
					t.Errorf("%s: resource %v is not one of the template's queues", id, res)
					continue
				}
				out[a.(string)] = append(out[a.(string)], names[q])
			}
		}
	}
	return out
}

func equalAccess(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		v = slices.Clone(v)
		sort.Strings(v)
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
