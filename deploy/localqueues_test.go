package deploy

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fauxqsQueues reads localstack/fauxqs-init.json's queues by name.
func fauxqsQueues(t *testing.T) map[string]queueDef {
	t.Helper()
	var init struct {
		Queues []struct {
			Name       string            `json:"name"`
			Attributes map[string]string `json:"attributes"`
		} `json:"queues"`
	}
	if err := json.Unmarshal([]byte(readRepoFile(t, "localstack/fauxqs-init.json")), &init); err != nil {
		t.Fatal(err)
	}
	out := map[string]queueDef{}
	for _, q := range init.Queues {
		d := queueDef{Name: q.Name, Visibility: 30}
		if v, ok := q.Attributes["VisibilityTimeout"]; ok {
			d.Visibility, _ = strconv.Atoi(v)
		}
		if rp := q.Attributes["RedrivePolicy"]; rp != "" {
			var p struct {
				Target     string `json:"deadLetterTargetArn"`
				MaxReceive string `json:"maxReceiveCount"`
			}
			if err := json.Unmarshal([]byte(rp), &p); err != nil {
				t.Fatalf("fauxqs %s RedrivePolicy: %v", q.Name, err)
			}
			d.DLQ = p.Target[strings.LastIndex(p.Target, ":")+1:]
			d.MaxReceive, _ = strconv.Atoi(p.MaxReceive)
		}
		out[q.Name] = d
	}
	return out
}

// hookQueues reads the LocalStack hook's queue list and settings: every
// queue in $queues gets "$q-dlq", max_receive and visibility.
func hookQueues(t *testing.T) map[string]queueDef {
	t.Helper()
	sh := readRepoFile(t, "localstack/init/ready.d/queues.sh")
	setting := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `="?([^"\n]*)"?$`).FindStringSubmatch(sh)
		if m == nil {
			t.Fatalf("queues.sh: no %s= line", name)
		}
		return m[1]
	}
	for _, use := range []string{`for q in $queues`, `--queue-name "$q-dlq"`, `maxReceiveCount\":\"$max_receive\"`, `VisibilityTimeout\":\"$visibility\"`} {
		if !strings.Contains(sh, use) {
			t.Fatalf("queues.sh no longer has %s: update this test's reading of it", use)
		}
	}
	maxReceive, _ := strconv.Atoi(setting("max_receive"))
	visibility, _ := strconv.Atoi(setting("visibility"))
	out := map[string]queueDef{}
	for _, q := range strings.Fields(setting("queues")) {
		out[q] = queueDef{Name: q, DLQ: q + "-dlq", MaxReceive: maxReceive, Visibility: visibility}
		out[q+"-dlq"] = queueDef{Name: q + "-dlq", Visibility: 30}
	}
	return out
}

// The local stacks create the queues deploy/sqs/queues.yaml declares: the
// same names, dead-letter links, maxReceiveCount and visibility.
func TestLocalQueuesMatchTemplate(t *testing.T) {
	want := map[string]queueDef{}
	for name, q := range templateQueues(t, loadTemplate(t)) {
		want[name] = queueDef{Name: name, DLQ: q.DLQ, MaxReceive: q.MaxReceive, Visibility: q.Visibility}
	}
	for src, have := range map[string]map[string]queueDef{"fauxqs-init.json": fauxqsQueues(t), "queues.sh": hookQueues(t)} {
		if !slices.Equal(slices.Sorted(maps.Keys(have)), slices.Sorted(maps.Keys(want))) {
			t.Errorf("%s creates %v, deploy/sqs/queues.yaml declares %v", src, slices.Sorted(maps.Keys(have)), slices.Sorted(maps.Keys(want)))
		}
		for name, w := range want {
			if h, ok := have[name]; ok && h != w {
				t.Errorf("%s: %s is %+v, deploy/sqs/queues.yaml says %+v", src, name, h, w)
			}
		}
	}
}

// Every queue name the services default to, and every one the manifests'
// ConfigMaps set (a *_QUEUE, *_QUEUES or *_ROUTES setting), is a queue
// deploy/sqs/queues.yaml declares: the template is the one list of queues.
func TestQueueNamesInSettingsAreDeclared(t *testing.T) {
	declared := templateQueues(t, loadTemplate(t))
	queueName := regexp.MustCompile(`onceflow-[a-z]+(?:-[a-z]+)*`)
	check := func(where, text string) int {
		n := 0
		for _, q := range queueName.FindAllString(text, -1) {
			n++
			if _, ok := declared[q]; !ok {
				t.Errorf("%s names queue %s, which deploy/sqs/queues.yaml does not declare", where, q)
			}
		}
		return n
	}
	names := 0
	for _, svc := range []string{"ingest", "relay", "invoicer", "reconciler", "console"} {
		path := "services/" + svc + "/internal/app/config.go"
		for _, tag := range regexp.MustCompile(`envDefault:"([^"]*)"`).FindAllStringSubmatch(readRepoFile(t, path), -1) {
			names += check(path, tag[1])
		}
	}
	if names < 8 {
		t.Fatalf("found %d queue names in the services' defaults, want the lot", names)
	}
	for _, path := range []string{"deploy/base/kustomization.yaml", "deploy/overlays/local/kustomization.yaml", "deploy/overlays/production/kustomization.yaml"} {
		for _, line := range regexp.MustCompile(`(?m)^.*_(QUEUE|QUEUES|ROUTES)=.*$`).FindAllString(readRepoFile(t, path), -1) {
			check(path, line)
		}
	}
}
