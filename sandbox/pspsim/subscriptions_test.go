package pspsim_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/sandbox/pspsim"
)

// A subscription to a plan is charged once per execute: each execution is
// notified signed to the plan's notification_url, fetched by its
// subscription and listed; a cancelled subscription is charged no more and
// keeps its executions as they were.
func TestSubscriptionExecutions(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{})
	rc := newReceiver(t)
	status, plan := call(t, http.MethodPost, e.url+"/v1/subscription/plan",
		`{"name":"Monthly","amount":490.00,"currency":"UYU","frequency_type":"MONTHLY","frequency_value":1,"notification_url":"`+rc.url+`"}`)
	if status != http.StatusOK {
		t.Fatalf("create plan: %d %v", status, plan)
	}
	planID := plan["id"].(json.Number).String()
	status, sub := post(t, e.url+"/sandbox/subscriptions", `{"plan_id":`+planID+`,"external_id":"order-sub"}`)
	if status != http.StatusOK || sub["status"] != "CONFIRMED" {
		t.Fatalf("subscribe: %d %v", status, sub)
	}
	subID := sub["id"].(json.Number).String()
	var ids []string
	for range 2 {
		status, ex := post(t, e.url+"/sandbox/subscriptions/"+subID+"/execute", "")
		if status != http.StatusOK {
			t.Fatalf("execute: %d %v", status, ex)
		}
		wantFields(t, ex, map[string]any{"status": "COMPLETED", "external_id": "order-sub", "amount_paid": json.Number("490.00"),
			"currency": "UYU", "subscription_id": json.Number(subID), "created_at": "2026-11-30T15:04:05.123+0000"})
		ids = append(ids, ex["id"].(string))
		n := rc.next(t)
		if err := dlocal.Verify(testSecret, testLogin, n.header.Get(dlocal.HeaderDate), n.body, n.header.Get(dlocal.HeaderAuthorization)); err != nil {
			t.Fatalf("execution notification signature: %v", err)
		}
		wantFields(t, decode(t, n.body), map[string]any{"id": ex["id"], "status": "COMPLETED", "subscription_id": json.Number(subID)})
	}
	if ids[0] == ids[1] {
		t.Fatalf("two executions share id %s", ids[0])
	}
	status, got := call(t, http.MethodGet, e.url+"/v1/subscription/"+subID+"/execution/"+ids[1], "")
	if status != http.StatusOK || got["id"] != ids[1] {
		t.Fatalf("get execution: %d %v", status, got)
	}
	if status, _ := call(t, http.MethodGet, e.url+"/v1/subscription/999/execution/"+ids[1], ""); status != http.StatusNotFound {
		t.Errorf("an execution under another subscription: %d, want 404", status)
	}
	listURL := e.url + "/v1/subscription/plan/" + planID + "/subscription/" + subID
	status, list := call(t, http.MethodGet, listURL+"/execution/all", "")
	if data, _ := list["data"].([]any); status != http.StatusOK || len(data) != 2 {
		t.Fatalf("list executions: %d %v", status, list)
	}
	if status, cancelled := call(t, http.MethodPatch, listURL+"/deactivate", ""); status != http.StatusOK || cancelled["status"] != "CANCELLED" {
		t.Fatalf("deactivate: %d %v", status, cancelled)
	}
	if status, refused := post(t, e.url+"/sandbox/subscriptions/"+subID+"/execute", ""); status != http.StatusBadRequest {
		t.Fatalf("execute a cancelled subscription: %d %v, want 400", status, refused)
	}
	status, got = call(t, http.MethodGet, e.url+"/v1/subscription/"+subID+"/execution/"+ids[0], "")
	if status != http.StatusOK || got["status"] != "COMPLETED" {
		t.Fatalf("an execution paid before the cancellation: %d %v, want it COMPLETED still", status, got)
	}
	if status, sent := post(t, e.url+"/sandbox/subscriptions/"+subID+"/executions/"+ids[0]+"/notify?copies=2", ""); status != http.StatusOK || sent["sent"] != json.Number("2") {
		t.Fatalf("resend: %d %v", status, sent)
	}
	rc.next(t)
	rc.next(t)
}

// With the pending-first fault a charge is notified PENDING and then
// COMPLETED; with the stale fault a stale PENDING copy follows the
// COMPLETED.
func TestExecutionFaults(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{Faults: pspsim.Faults{PendingFirstRate: 1, StaleRate: 1}})
	rc := newReceiver(t)
	_, plan := call(t, http.MethodPost, e.url+"/v1/subscription/plan",
		`{"amount":10,"currency":"UYU","frequency_type":"WEEKLY","notification_url":"`+rc.url+`"}`)
	_, sub := post(t, e.url+"/sandbox/subscriptions", `{"plan_id":`+plan["id"].(json.Number).String()+`,"external_id":"o"}`)
	status, ex := post(t, e.url+"/sandbox/subscriptions/"+sub["id"].(json.Number).String()+"/execute", "")
	if status != http.StatusOK || ex["status"] != "PENDING" {
		t.Fatalf("execute with pending first: %d %v", status, ex)
	}
	seen := map[any]int{}
	for range 3 { // in no fixed order: each copy goes on its own
		seen[decode(t, rc.next(t).body)["status"]]++
	}
	if seen["PENDING"] != 2 || seen["COMPLETED"] != 1 {
		t.Fatalf("notified %v, want PENDING, COMPLETED and a stale PENDING", seen)
	}
	rc.none(t)
}

// A silent execution is charged and listed, and never notified, not even
// through the pending-first fault's later completion.
func TestSilentExecution(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{Faults: pspsim.Faults{PendingFirstRate: 1}})
	rc := newReceiver(t)
	_, plan := call(t, http.MethodPost, e.url+"/v1/subscription/plan",
		`{"amount":10,"currency":"UYU","frequency_type":"WEEKLY","notification_url":"`+rc.url+`"}`)
	planID := plan["id"].(json.Number).String()
	_, sub := post(t, e.url+"/sandbox/subscriptions", `{"plan_id":`+planID+`,"external_id":"o"}`)
	subID := sub["id"].(json.Number).String()
	status, ex := post(t, e.url+"/sandbox/subscriptions/"+subID+"/execute", `{"silent":true}`)
	if status != http.StatusOK || ex["status"] != "COMPLETED" {
		t.Fatalf("silent execute: %d %v", status, ex)
	}
	status, list := call(t, http.MethodGet, e.url+"/v1/subscription/plan/"+planID+"/subscription/"+subID+"/execution/all", "")
	if data, _ := list["data"].([]any); status != http.StatusOK || len(data) != 1 || data[0].(map[string]any)["id"] != ex["id"] {
		t.Fatalf("list executions: %d %v, want the silent one", status, list)
	}
	rc.none(t)
}

// Plans are listed by id, and a plan's subscriptions, cancelled ones too,
// with the external_id each was subscribed with; an unknown plan is 404.
func TestListsPlansAndTheirSubscriptions(t *testing.T) {
	t.Parallel()
	e := start(t, pspsim.Config{})
	var plans []string
	for range 2 {
		_, p := call(t, http.MethodPost, e.url+"/v1/subscription/plan", `{"amount":10,"currency":"UYU","frequency_type":"MONTHLY"}`)
		plans = append(plans, p["id"].(json.Number).String())
	}
	_, first := post(t, e.url+"/sandbox/subscriptions", `{"plan_id":`+plans[1]+`,"external_id":"o-1"}`)
	post(t, e.url+"/sandbox/subscriptions", `{"plan_id":`+plans[0]+`,"external_id":"o-other"}`)
	_, second := post(t, e.url+"/sandbox/subscriptions", `{"plan_id":`+plans[1]+`,"external_id":"o-2"}`)
	call(t, http.MethodPatch, e.url+"/v1/subscription/plan/"+plans[1]+"/subscription/"+first["id"].(json.Number).String()+"/deactivate", "")

	status, list := call(t, http.MethodGet, e.url+"/v1/subscription/plan/all?page=1&page_size=1", "")
	data, _ := list["data"].([]any)
	if status != http.StatusOK || len(data) != 1 || data[0].(map[string]any)["id"] != json.Number(plans[0]) || list["has_more"] != true {
		t.Fatalf("first page of plans: %d %v, want plan %s and more", status, list, plans[0])
	}
	status, list = call(t, http.MethodGet, e.url+"/v1/subscription/plan/"+plans[1]+"/subscription/all", "")
	data, _ = list["data"].([]any)
	if status != http.StatusOK || len(data) != 2 || list["has_more"] != false {
		t.Fatalf("subscriptions of plan %s: %d %v, want 2", plans[1], status, list)
	}
	wantFields(t, data[0].(map[string]any), map[string]any{"id": first["id"], "external_id": "o-1", "status": "CANCELLED"})
	wantFields(t, data[1].(map[string]any), map[string]any{"id": second["id"], "external_id": "o-2", "status": "CONFIRMED"})
	if status, _ := call(t, http.MethodGet, e.url+"/v1/subscription/plan/999/subscription/all", ""); status != http.StatusNotFound {
		t.Fatalf("subscriptions of an unknown plan: %d, want 404", status)
	}
}
