package relay

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceflow/onceflow/pkg/outbox"
	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/pkg/testwait"
)

// replica is one relay process of a test: its own pool, holder and
// metrics, like a pod.
type replica struct {
	holder string
	pool   *pgxpool.Pool
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

// shardSettings are testSettings with small batches, so a shard has
// several batches in flight, and shards shards per outbox.
func shardSettings(holder string, shards int) Settings {
	s := testSettings(holder)
	s.BatchSize, s.Shards = 10, shards
	return s
}

// startReplica runs a relay of the billing outbox with settings s until
// the test ends or it is stopped or killed.
func (f *fixture) startReplica(t testing.TB, s Settings) *replica {
	t.Helper()
	holder := s.Holder
	pool, err := pg.Open(context.Background(), f.dsn, PoolOptions...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	reg, m := newMetrics(t)
	r := New(pool, f.sqs, m, zaptestLogger(t).Named(holder), f.billingOutbox(), s)
	ctx, cancel := context.WithCancel(context.Background())
	rep := &replica{holder: holder, pool: pool, reg: reg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rep.done)
		r.Run(ctx)
	}()
	t.Cleanup(rep.stop)
	return rep
}

// stop shuts the replica down as SIGTERM does: batches in flight finish
// and the leases are released.
func (r *replica) stop() {
	r.cancel()
	<-r.done
}

// kill stops the replica as a crash does: its database connections go
// first, so nothing in flight is recorded and no lease is released or
// roster entry removed.
func (r *replica) kill() {
	r.pool.Close()
	r.stop()
}

// startReplicas starts n replicas named prefix0, prefix1...
func (f *fixture) startReplicas(t testing.TB, prefix string, n, shards int) []*replica {
	t.Helper()
	out := make([]*replica, n)
	for i := range out {
		out[i] = f.startReplica(t, shardSettings(fmt.Sprintf("%s%d", prefix, i), shards))
	}
	return out
}

// shardsHeld returns, by holder, how many live leases of the n-shard
// layout of the billing outbox each holds.
func (f *fixture) shardsHeld(t testing.TB, n int) map[string]int {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = LeaseName(ingestOutbox, i, n)
	}
	rows, err := f.pool.Query(context.Background(),
		`SELECT holder, count(*) FROM relay.leases WHERE name = ANY($1) AND expires_at > now() GROUP BY holder`, names)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var holder string
		var held int
		if err := rows.Scan(&holder, &held); err != nil {
			t.Fatal(err)
		}
		out[holder] = held
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// balanced reports whether the n shards are all held by exactly reps, each
// holding its fair share: n/len(reps) rounded down or up.
func balanced(held map[string]int, reps []*replica, n int) bool {
	if len(held) != len(reps) {
		return false
	}
	lo, hi, sum := n/len(reps), (n+len(reps)-1)/len(reps), 0
	for _, r := range reps {
		h := held[r.holder]
		if h < lo || h > hi {
			return false
		}
		sum += h
	}
	return sum == n
}

// insertRange commits the billing messages from..to-1, twenty a
// transaction.
func (f *fixture) insertRange(t testing.TB, from, to int) {
	t.Helper()
	for i := from; i < to; i += 20 {
		var msgs []outbox.Message
		for j := i; j < min(i+20, to); j++ {
			msgs = append(msgs, message(j, billingType))
		}
		f.insert(t, msgs...)
	}
}

// receiveAll waits until every row is published, then takes rows messages
// off the queue and returns how many times each event key arrived.
func (f *fixture) receiveAll(t testing.TB, rows int) map[string]int {
	t.Helper()
	testwait.Until(t, waitTimeout, waitEvery, "every row published", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox WHERE published_at IS NULL`) == 0
	})
	got := f.receive(t, rows)
	out := map[string]int{}
	for i := range rows {
		key := message(i, billingType).EventKey
		out[key] = len(got[key])
	}
	if len(got) != rows {
		t.Errorf("received %d event keys, want %d", len(got), rows)
	}
	return out
}

func TestThreeRelaysShareEightShards(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	reps := f.startReplicas(t, "r", 3, 8)
	testwait.Until(t, waitTimeout, waitEvery, "8 shards shared 3, 3, 2", func() bool {
		return balanced(f.shardsHeld(t, 8), reps, 8)
	})

	const rows = 400
	f.insertRange(t, 0, rows)
	counts := f.receiveAll(t, rows)
	unsure := sentUnconfirmed(t, registries(reps)...)
	expectDelivered(t, counts, unsure)
	var total float64
	for _, r := range reps {
		n := metric(t, r.reg, "onceflow_relay_published_total")
		if n == 0 {
			t.Errorf("relay %s published nothing: the shards are not shared", r.holder)
		}
		total += n
	}
	// A row's publication is counted once it is recorded; a record whose
	// answer was lost (one of the unconfirmed) may have committed uncounted.
	if total > rows || total < float64(rows-unsure) {
		t.Errorf("published_total summed over the relays = %v, want %d (%d unconfirmed)", total, rows, unsure)
	}
	testwait.Until(t, waitTimeout, waitEvery, "each relay reporting 2 or 3 shards held", func() bool {
		for _, r := range reps {
			if held := metric(t, r.reg, "onceflow_relay_shards_held"); held < 2 || held > 3 {
				return false
			}
		}
		return true
	})
}

// registries are the metrics registries of reps.
func registries(reps []*replica) []*prometheus.Registry {
	out := make([]*prometheus.Registry, len(reps))
	for i, r := range reps {
		out[i] = r.reg
	}
	return out
}

// TestJoiningRelaysTakeTheirShare starts one relay, which takes all eight
// shards, then two more while rows flow: the first hands shards back
// cleanly, so the three settle at 3/3/2 and no row is sent twice.
func TestJoiningRelaysTakeTheirShare(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first := f.startReplicas(t, "first", 1, 8)
	testwait.Until(t, waitTimeout, waitEvery, "one relay holding all 8 shards", func() bool {
		return balanced(f.shardsHeld(t, 8), first, 8)
	})
	const rows = 600
	var inserting sync.WaitGroup
	inserting.Go(func() { f.insertRange(t, 0, rows) })
	reps := append(first, f.startReplicas(t, "joined", 2, 8)...)
	testwait.Until(t, waitTimeout, waitEvery, "8 shards shared 3, 3, 2", func() bool {
		return balanced(f.shardsHeld(t, 8), reps, 8)
	})
	inserting.Wait()
	counts := f.receiveAll(t, rows)
	expectDelivered(t, counts, sentUnconfirmed(t, registries(reps)...))
}

func TestKilledRelaysShardsAreTakenOver(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	reps := f.startReplicas(t, "r", 3, 8)
	testwait.Until(t, waitTimeout, waitEvery, "8 shards shared 3, 3, 2", func() bool {
		return balanced(f.shardsHeld(t, 8), reps, 8)
	})
	// Kill a relay while it drains a backlog, so it has batches in flight.
	const rows, before = 1000, 800
	f.insertRange(t, 0, before)
	dead, survivors := reps[0], reps[1:]
	killedShards := f.shardsHeld(t, 8)[dead.holder]
	testwait.Until(t, waitTimeout, waitEvery, "the doomed relay publishing", func() bool {
		return metric(t, dead.reg, "onceflow_relay_published_total") > 0
	})
	dead.kill()
	killed := time.Now()
	f.insertRange(t, before, rows)

	testwait.Until(t, waitTimeout, waitEvery, "the dead relay's shards taken over: 4 each", func() bool {
		return balanced(f.shardsHeld(t, 8), survivors, 8)
	})
	t.Logf("shards taken over %v after the kill (lease TTL %v)", time.Since(killed).Round(10*time.Millisecond), shardSettings("", 8).LeaseTTL)
	counts := f.receiveAll(t, rows)
	// Each of the dead relay's shards had at most batchesInFlight batches
	// sent and not recorded; only those rows, and any the survivors left
	// unconfirmed, can arrive twice.
	bound := killedShards * batchesInFlight * shardSettings("", 8).BatchSize
	t.Logf("killed relay held %d shards: %d shards x %d batches x %d rows in flight",
		killedShards, killedShards, batchesInFlight, shardSettings("", 8).BatchSize)
	expectDelivered(t, counts, bound+sentUnconfirmed(t, registries(survivors)...))
	if n := f.count(t, `SELECT count(*) FROM relay.lease_members WHERE holder = $1`, dead.holder); n != 1 {
		t.Errorf("roster rows of the killed relay = %d, want 1: it must not have left as a clean stop does", n)
	}
}

// TestChangingShardCount rolls three relays from 4 shards to 8 while rows
// are inserted. When the old relays stop cleanly every row arrives exactly
// once; when they crash, the new layout waits for their leases to lapse and
// only rows of their batches in flight arrive twice.
func TestChangingShardCount(t *testing.T) {
	t.Parallel()
	t.Run("clean rollout", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		counts, reps := f.changeShards(t, (*replica).stop)
		expectDelivered(t, counts, sentUnconfirmed(t, registries(reps)...))
		if n := f.count(t, `SELECT count(*) FROM relay.lease_members WHERE holder LIKE 'four%'`); n != 0 {
			t.Errorf("%d roster rows of the stopped relays, want 0: a clean stop leaves", n)
		}
	})
	t.Run("old relays crash", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		counts, reps := f.changeShards(t, (*replica).kill)
		// The 4 old shards' batches in flight, and what the new relays
		// left unconfirmed.
		bound := 4 * batchesInFlight * shardSettings("", 4).BatchSize
		expectDelivered(t, counts, bound+sentUnconfirmed(t, registries(reps[3:])...))
	})
}

// changeShards runs three relays over 4 shards, inserts rows, starts three
// over 8 and ends the old ones with end, then returns how many times each
// event key arrived and the six relays, the old first.
func (f *fixture) changeShards(t *testing.T, end func(*replica)) (map[string]int, []*replica) {
	t.Helper()
	old := f.startReplicas(t, "four", 3, 4)
	testwait.Until(t, waitTimeout, waitEvery, "4 shards shared 2, 1, 1", func() bool {
		return balanced(f.shardsHeld(t, 4), old, 4)
	})
	const rows = 600
	var inserting sync.WaitGroup
	inserting.Go(func() { f.insertRange(t, 0, rows) })
	testwait.Until(t, waitTimeout, waitEvery, "a third of the rows published under 4 shards", func() bool {
		return f.count(t, `SELECT count(*) FROM ingest.outbox WHERE published_at IS NOT NULL`) >= rows/3
	})

	// The new relays start; the new layout waits for the old to go.
	next := f.startReplicas(t, "eight", 3, 8)
	testwait.Until(t, waitTimeout, waitEvery, "the new relays on their roster", func() bool {
		return f.count(t, `SELECT count(*) FROM relay.lease_members WHERE holder LIKE 'eight%' AND expires_at > now()`) == 3
	})
	if held := f.shardsHeld(t, 8); len(held) != 0 {
		t.Errorf("8-shard leases held %v while the 4-shard relays run; the layouts must not overlap", held)
	}
	for _, r := range old {
		end(r)
	}
	testwait.Until(t, waitTimeout, waitEvery, "8 shards shared 3, 3, 2 by the new relays", func() bool {
		return balanced(f.shardsHeld(t, 8), next, 8)
	})
	inserting.Wait()
	counts := f.receiveAll(t, rows)
	if n := f.count(t, `SELECT count(*) FROM relay.leases WHERE name LIKE '%/4'`); n != 0 {
		t.Errorf("%d leases of the 4-shard layout left, want them retired", n)
	}
	return counts, append(old, next...)
}

func TestShareOfShards(t *testing.T) {
	t.Parallel()
	_, m := newMetrics(t)
	tests := []struct {
		name    string
		members int
		holders []string // of each shard, "" for none
		want    int
	}{
		{"8 shards, 3 relays, none held: round up", 3, []string{"", "", "", "", "", "", "", ""}, 3},
		{"4 over 3, a relay starved and none free: round down", 3, []string{"me", "me", "b", "b"}, 1},
		{"4 over 3, a relay starved but one free: round up", 3, []string{"me", "", "b", "b"}, 2},
		{"8 over 3, one dead with its shards lapsed: keep taking", 3, []string{"me", "me", "me", "b", "b", "b", "", ""}, 3},
		{"8 over 2: even split", 2, []string{"me", "b", "b", "b", "b", "", "", ""}, 4},
		{"more relays than shards: one each", 10, []string{"", "", "", "", "", "", "", ""}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSettings("me")
			s.Shards = len(tt.holders)
			r := New(nil, nil, m, zaptestLogger(t), Outbox{Table: ingestOutbox}, s)
			live := map[string]string{}
			for i, h := range tt.holders {
				if h != "" {
					live[LeaseName(ingestOutbox, i, len(tt.holders))] = h
				}
			}
			if got := r.share(tt.members, live); got != tt.want {
				t.Errorf("share = %d, want %d", got, tt.want)
			}
		})
	}
}
