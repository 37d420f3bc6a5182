package fiscalsim

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/backoff"
	"github.com/onceflow/onceflow/pkg/money"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// The keyed API is a generic JSON provider that takes an Idempotency-Key
// and answers a GET by key (the invoicer's "http" adapter speaks it; see
// services/invoicer/README.md). It shares documents and fault rules with
// the SOAP endpoints. Requests carry "Authorization: Bearer <AccessKey>".
//
//	POST /api/documents        Idempotency-Key: <reference>; the same key
//	                           again answers the document first stored
//	GET  /api/documents/{key}  200 with the document, 404 when none

// KeyedDocument is a document as the keyed API sends and answers it.
type KeyedDocument struct {
	Reference    string         `json:"reference"`
	Type         int            `json:"type"`
	Series       string         `json:"series,omitempty"`
	Number       int            `json:"number,omitempty"`
	Status       string         `json:"status,omitempty"` // pending, authorized, observed, rejected
	IssueDate    string         `json:"issue_date"`
	Currency     string         `json:"currency"`
	Total        string         `json:"total"`
	Addendum     string         `json:"addendum"`
	CAEID        string         `json:"cae_id,omitempty"`
	CAEFrom      int            `json:"cae_from,omitempty"`
	CAETo        int            `json:"cae_to,omitempty"`
	CAEExpires   string         `json:"cae_expires,omitempty"`
	SecurityCode string         `json:"security_code,omitempty"`
	VerifyURL    string         `json:"verify_url,omitempty"`
	Original     *KeyedOriginal `json:"original,omitempty"`
}

// KeyedOriginal is a credit note's reference to its invoice.
type KeyedOriginal struct {
	Type   int    `json:"type"`
	Series string `json:"series"`
	Number int    `json:"number"`
	Date   string `json:"date"`
}

// keyedStatus names CFEStatus codes in the keyed API.
var keyedStatus = map[int]string{statusSentToDGI: "pending", statusAuthorized: "authorized", statusRejected: "rejected", 6: "voided", statusObserved: "observed"}

func keyed(d Document) KeyedDocument {
	k := KeyedDocument{Reference: d.Reference, Type: d.Type, Series: d.Series, Number: d.Number, Status: keyedStatus[d.Status],
		IssueDate: d.IssueDate, Currency: d.Currency, Total: d.Total, Addendum: d.Addendum, CAEID: d.CAEID,
		CAEFrom: d.CAEFrom, CAETo: d.CAETo, CAEExpires: d.CAEExpires, SecurityCode: d.SecurityCode, VerifyURL: d.QRCode}
	if len(d.RefersTo) > 0 {
		r := d.RefersTo[0]
		k.Original = &KeyedOriginal{Type: r.Type, Series: r.Series, Number: r.Number, Date: r.Date}
	}
	return k
}

// authorized checks the bearer token, answering 401 when it is wrong.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AccessKey)) != 1 {
		writeError(w, http.StatusUnauthorized, "unauthorized", "want Authorization: Bearer <access key>")
		return false
	}
	return true
}

// keyedEmit serves POST /api/documents.
func (s *Server) keyedEmit(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Emits++ })
	if !s.authorized(w, r) {
		return
	}
	var in KeyedDocument
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_body", "want a JSON document")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	draft, err := keyedDraft(in)
	if err == nil && key != in.Reference {
		err = fmt.Errorf("Idempotency-Key must be the document's reference")
	}
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "invalid_document", err.Error())
		return
	}
	act := s.take(key, true)
	_ = backoff.Sleep(r.Context(), act.latency)
	if act.fail {
		s.count(func(st *Stats) { st.Injected++ })
		writeError(w, http.StatusServiceUnavailable, "unavailable", "injected fault")
		return
	}
	d, replay := s.issueKeyed(key, draft, act)
	s.log.Info("keyed emission", zap.String("reference", key), zap.Bool("replay", replay), zap.Int("number", d.Number))
	if act.hang && !replay {
		s.count(func(st *Stats) { st.Injected++ })
		hold(r.Context(), act.hangFor)
	}
	status := http.StatusCreated
	if replay {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(keyed(misdescribe([]Document{d}, act)[0]))
}

// keyedDraft validates a keyed request into a draft document.
func keyedDraft(in KeyedDocument) (Document, error) {
	if in.Reference == "" || !digits(in.Reference) {
		return Document{}, fmt.Errorf("reference %q: want digits", in.Reference)
	}
	if _, err := cfeType(fmt.Sprint(in.Type)); err != nil {
		return Document{}, fmt.Errorf("type: %w", err)
	}
	total, err := money.ParseMinor(in.Total)
	if err != nil {
		return Document{}, fmt.Errorf("total: %w", err)
	}
	if _, err := time.Parse(dateLayout, in.IssueDate); err != nil {
		return Document{}, fmt.Errorf("issue_date %q: want YYYY-MM-DD", in.IssueDate)
	}
	d := Document{Reference: in.Reference, Type: in.Type, Total: money.FormatMinor(total), Currency: in.Currency,
		Addendum: in.Addendum, IssueDate: in.IssueDate}
	if o := in.Original; o != nil {
		d.RefersTo = []DocumentRef{{Type: o.Type, Series: o.Series, Number: o.Number, Date: o.Date, Reason: "Refund"}}
	}
	if isNote(in.Type) != (in.Original != nil) {
		return Document{}, fmt.Errorf("credit notes, and only they, carry original")
	}
	return d, nil
}

// issueKeyed stores draft under key unless the key was used before, in
// which case it returns the document first stored (replay true).
func (s *Server) issueKeyed(key string, draft Document, act action) (Document, bool) {
	s.mu.Lock()
	if i, ok := s.byKey[key]; ok {
		d := s.docs[i].clone()
		s.mu.Unlock()
		return d, true
	}
	d := s.storeLocked(draft, act, s.cfg.Now())
	s.byKey[key] = len(s.docs) - 1
	s.mu.Unlock()
	s.hooks.statusChanged(d)
	return d, false
}

// keyedGet serves GET /api/documents/{key}; a read counts as a poll.
func (s *Server) keyedGet(w http.ResponseWriter, r *http.Request) {
	s.count(func(st *Stats) { st.Queries++ })
	if !s.authorized(w, r) {
		return
	}
	key := r.PathValue("key")
	_ = backoff.Sleep(r.Context(), s.take(key, false).latency)
	s.mu.Lock()
	i, ok := s.byKey[key]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no document under this key")
		return
	}
	found := s.find(filter{items: []specific{{reference: key, number: s.numberAt(i)}}})
	if len(found) == 0 {
		writeError(w, http.StatusNotFound, "not_found", "no document under this key")
		return
	}
	server.WriteJSON(w, http.StatusOK, keyed(found[0]))
}

func (s *Server) numberAt(i int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.docs[i].Number
}
