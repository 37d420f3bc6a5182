package pspsim

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/sandbox/internal/notifier"
)

// notifyAsync delivers body to url in the background with the faults (see
// notifier.Notifier.Notify).
func (s *Server) notifyAsync(kind, id, url string, body []byte) {
	s.notifyAfter(0, kind, id, url, body)
}

// notifyAfter is notifyAsync with every copy held back by wait first.
func (s *Server) notifyAfter(wait time.Duration, kind, id, url string, body []byte) {
	s.notes.Notify(wait, kind, id, url, s.attempt(body))
}

// attempt is one signed delivery of body.
func (s *Server) attempt(body []byte) notifier.Attempt {
	return func(ctx context.Context, url string) (int, error) { return s.post(ctx, url, body) }
}

// post sends body signed with Config.Login and SecretKey over
// login + X-Date + body, as dLocal signs its notifications.
func (s *Server) post(ctx context.Context, url string, body []byte) (status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	date := dlocal.FormatDate(s.cfg.Now())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(dlocal.HeaderDate, date)
	req.Header.Set(dlocal.HeaderAuthorization, dlocal.Authorization(dlocal.Sign(s.cfg.SecretKey, s.cfg.Login, date, body)))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, nil
}

// target is the URL a notification for an object goes to: its own
// notification_url, else Config.NotifyURL.
func (s *Server) target(objectURL string) string {
	if objectURL != "" {
		return objectURL
	}
	return s.cfg.NotifyURL
}
