package pspsim

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/dlocal"
)

// maxAttempts is dLocal's documented ceiling on notification attempts.
const maxAttempts = 12

// notifyAsync delivers body to url in the background: as many copies as the
// faults draw (none when lost), each after its own delay and retried on the
// retry schedule until the receiver answers 2xx. The caller must not hold
// s.mu. An empty url or a closed Server sends nothing.
func (s *Server) notifyAsync(kind, id, url string, body []byte) {
	s.notifyAfter(0, kind, id, url, body)
}

// notifyAfter is notifyAsync with every copy held back by wait first.
func (s *Server) notifyAfter(wait time.Duration, kind, id, url string, body []byte) {
	if url == "" {
		s.log.Info("notification skipped: no url", zap.String("kind", kind), zap.String("id", id))
		return
	}
	copies := s.dice.copies()
	if copies == 0 {
		s.lost.Add(1)
		s.log.Info("notification lost on purpose", zap.String("kind", kind), zap.String("id", id))
		return
	}
	s.extra.Add(int64(copies - 1))
	for range copies {
		delay := wait + s.dice.delay()
		s.background(func() {
			if backoff.Sleep(s.ctx, delay) {
				s.deliver(kind, id, url, body)
			}
		})
	}
}

// background runs fn in a goroutine Close waits for, unless closed.
func (s *Server) background(fn func()) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// deliver runs the retry loop of one notification until success, exhaustion
// or Close.
func (s *Server) deliver(kind, id, url string, body []byte) {
	for attempt := 1; ; attempt++ {
		if s.send(s.ctx, kind, id, url, body) {
			return
		}
		if attempt == maxAttempts {
			s.log.Warn("notification given up", zap.String("kind", kind), zap.String("id", id), zap.Int("attempts", maxAttempts))
			return
		}
		if !backoff.Sleep(s.ctx, s.dice.retryWait(attempt, s.cfg.RetryDelay)) {
			return
		}
	}
}

// send makes one signed notification attempt and reports whether the
// receiver answered 2xx. Every attempt counts in the stats.
func (s *Server) send(ctx context.Context, kind, id, url string, body []byte) bool {
	ok, status, err := s.post(ctx, url, body)
	if ok {
		s.sent.Add(1)
		s.log.Debug("notification delivered", zap.String("kind", kind), zap.String("id", id), zap.Int("status", status))
		return true
	}
	s.failed.Add(1)
	s.log.Info("notification failed", zap.String("kind", kind), zap.String("id", id), zap.Int("status", status), zap.Error(err))
	return false
}

// post sends body signed with Config.Login and SecretKey over
// login + X-Date + body, as dLocal signs its notifications.
func (s *Server) post(ctx context.Context, url string, body []byte) (ok bool, status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	date := dlocal.FormatDate(s.cfg.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dlocal.HeaderDate, date)
	req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(s.cfg.SecretKey, s.cfg.Login, date, body)))
	resp, err := s.client.Do(req)
	if err != nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode >= 200 && resp.StatusCode < 300, resp.StatusCode, nil
}

// target is the URL a notification for an object goes to: its own
// notification_url, else Config.NotifyURL.
func (s *Server) target(objectURL string) string {
	if objectURL != "" {
		return objectURL
	}
	return s.cfg.NotifyURL
}
