package store

import (
	"context"
	"time"

	"github.com/onceflow/onceflow/pkg/pg"
	"github.com/onceflow/onceflow/services/ingest/internal/store/dbsqlc"
)

// IdempotencyKey is what is kept of a request sent with an
// Idempotency-Key: its body's hash and, once it finished, its response.
type IdempotencyKey struct {
	RequestHash    []byte
	ResponseStatus int // 0 while the first request is in progress
	ResponseBody   []byte
}

// BeginIdempotent claims key on route for a request whose body hashes to
// hash; it returns false when the key is already known. An in-progress
// claim older than staleBefore (its process died) is taken over when the
// hash is the same.
func (s *Store) BeginIdempotent(ctx context.Context, route, key string, hash []byte, staleBefore time.Time) (claimed bool, err error) {
	n, err := s.q.IdempotencyBegin(ctx, dbsqlc.IdempotencyBeginParams{Route: route, Key: key, RequestHash: hash, StaleBefore: staleBefore})
	if err != nil {
		return false, pg.Interpret(err, "claim idempotency key")
	}
	return n > 0, nil
}

// FinishIdempotent keeps the response to replay for key on route.
func (s *Store) FinishIdempotent(ctx context.Context, route, key string, status int, body []byte) error {
	st := int32(status)
	err := s.q.IdempotencyFinish(ctx, dbsqlc.IdempotencyFinishParams{Route: route, Key: key, ResponseStatus: &st, ResponseBody: body})
	return pg.Interpret(err, "finish idempotency key")
}

// ForgetIdempotent drops the in-progress claim of key on route, whose
// request failed, so the client may try again.
func (s *Store) ForgetIdempotent(ctx context.Context, route, key string) error {
	return pg.Interpret(s.q.IdempotencyForget(ctx, route, key), "forget idempotency key")
}

// Idempotent returns what is kept of key on route, or an error of kind
// NotFound when it is not there (its request just failed and was
// forgotten).
func (s *Store) Idempotent(ctx context.Context, route, key string) (IdempotencyKey, error) {
	row, err := s.q.IdempotencyGet(ctx, route, key)
	if err != nil {
		return IdempotencyKey{}, pg.Interpret(err, "idempotency key")
	}
	k := IdempotencyKey{RequestHash: row.RequestHash, ResponseBody: row.ResponseBody}
	if row.ResponseStatus != nil {
		k.ResponseStatus = int(*row.ResponseStatus)
	}
	return k, nil
}

// PruneIdempotencyKeys deletes up to max keys created before cutoff and
// returns how many it deleted.
func (s *Store) PruneIdempotencyKeys(ctx context.Context, cutoff time.Time, max int) (int64, error) {
	n, err := s.q.IdempotencyPrune(ctx, cutoff, int32(max))
	return n, pg.Interpret(err, "prune idempotency keys")
}
