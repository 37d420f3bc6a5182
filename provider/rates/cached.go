package rates

import (
	"context"
	"math/big"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// cacheSize is how many code and day values a Cached keeps at most: a few
// currencies and the UI over the days documents are dated.
const cacheSize = 1024

// Cached keeps what a Source answered for each code and day for a while, so
// a document does not cost a read of it. Only values are kept: a missing
// rate or an error is asked again next time, so a value published later
// is used as soon as it is there.
type Cached struct {
	src  Source
	seen *expirable.LRU[cacheKey, *big.Rat]
}

type cacheKey struct {
	code string
	day  time.Time
}

// NewCached returns src's answers kept for ttl.
func NewCached(src Source, ttl time.Duration) *Cached {
	return &Cached{src: src, seen: expirable.NewLRU[cacheKey, *big.Rat](cacheSize, nil, ttl)}
}

// Rate returns code's value on day: the one kept, or src's, kept.
func (c *Cached) Rate(ctx context.Context, code string, day time.Time) (*big.Rat, error) {
	k := cacheKey{code, Day(day)}
	if v, ok := c.seen.Get(k); ok {
		return new(big.Rat).Set(v), nil
	}
	v, err := c.src.Rate(ctx, code, day)
	if err != nil {
		return nil, err
	}
	c.seen.Add(k, new(big.Rat).Set(v))
	return v, nil
}
