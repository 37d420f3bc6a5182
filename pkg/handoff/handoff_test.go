package handoff_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceflow/onceflow/pkg/handoff"
)

func TestReservationsBoundTheHandoffAndTakeGivesTheOldestFirst(t *testing.T) {
	h := handoff.New[string](time.Minute, 3)
	first, second := time.Unix(100, 0), time.Unix(200, 0)
	if !h.Reserve(2) || h.Reserve(2) {
		t.Fatal("a handoff of 3 took reservations of 2 and 2")
	}
	h.Fill(2, []string{"a"}, first) // one of the two was a duplicate
	if !h.Reserve(2) {
		t.Fatal("the place the duplicate left was not freed")
	}
	h.Fill(2, []string{"b", "c"}, second)
	got, at := h.Take(2)
	if fmt.Sprint(got) != "[a b]" || !at.Equal(first) || h.Len() != 1 {
		t.Errorf("took %v leased at %v with %d left, want [a b] at %v with 1 left", got, at, h.Len(), first)
	}
	h.Close()
	if h.Reserve(1) {
		t.Error("a closed handoff took a reservation")
	}
	if got, _ := h.Take(5); fmt.Sprint(got) != "[c]" {
		t.Errorf("after closing took %v, want what was queued: [c]", got)
	}
}

func TestStopClosesAndReleasesUnderTheTokenOutlivingTheLoopsContext(t *testing.T) {
	h := handoff.New[string](time.Minute, 3)
	loop, cancel := context.WithCancel(t.Context())
	cancel() // the loop has stopped
	var released uuid.UUID
	n, err := h.Stop(loop, func(ctx context.Context, token uuid.UUID) (int64, error) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		released = token
		return 2, nil
	})
	if err != nil || n != 2 || released != h.Token() || h.Reserve(1) {
		t.Errorf("Stop: %d %v, released under %s (want %s), reservations after it taken: %v", n, err, released, h.Token(), h.Reserve(1))
	}
}
