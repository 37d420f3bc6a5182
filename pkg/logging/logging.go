// Package logging builds the one zap logger each binary injects everywhere.
package logging

import (
	"fmt"
	"io"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// FlushInterval bounds how long a log line waits in the buffer. Writing
// lines in batches instead of one write each saves a sixth of ingest's
// webhook throughput; a kill -9 loses at most this much of the log, never
// data, which is in PostgreSQL.
const FlushInterval = 200 * time.Millisecond

// New returns a JSON logger on stderr; see NewTo.
func New(service, level string) (*zap.Logger, error) { return NewTo(os.Stderr, service, level) }

// NewTo returns a JSON logger writing to w at level ("debug", "info", "warn",
// "error") named after the service, sampled like zap's production logger.
// Call Sync before exiting to flush it. An unknown level is an error naming
// LOG_LEVEL.
func NewTo(w io.Writer, service, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("LOG_LEVEL: want debug, info, warn or error, got %q", level)
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	out := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(w), FlushInterval: FlushInterval}
	core := zapcore.NewSamplerWithOptions(zapcore.NewCore(zapcore.NewJSONEncoder(enc), out, lvl), time.Second, 100, 100)
	return zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.Lock(os.Stderr))).Named(service), nil
}
