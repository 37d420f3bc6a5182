package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/outbox"
)

// listen wakes every shard whenever a producer commits a row to this
// relay's outbox, until ctx ends. It holds a connection of its own, outside the pool,
// for LISTEN; when that connection fails the relay keeps polling and listen
// reconnects after a poll interval.
func (r *Relay) listen(ctx context.Context) {
	for {
		err := r.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("listen for outbox notifications; polling meanwhile", zap.Error(err))
		if !backoff.Sleep(ctx, r.s.PollInterval) {
			return
		}
	}
}

func (r *Relay) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, r.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{outbox.Channel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Rows committed before LISTEN took effect sent no notification we heard.
	r.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		if n.Payload == r.name {
			r.wakeAll()
		}
	}
}

// wakeAll wakes the publishing loop of every shard this process leads; a
// shard it does not lead keeps the wake for when it does, which costs one
// claim.
func (r *Relay) wakeAll() {
	for _, sh := range r.shards {
		signal(sh.wake)
	}
}

// signal wakes the publishing loop without blocking; one pending wake-up is
// enough however many rows arrived.
func signal(wake chan<- struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}
