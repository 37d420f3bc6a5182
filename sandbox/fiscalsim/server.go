// Package fiscalsim simulates InvoiCy Uruguay's SOAP web services as onceflow
// speaks them (docs/wire-invoicy.md): emission (aws_emissionfactura.aspx) and
// query (aws_consultafactura.aspx), a generic keyed JSON API (/api/documents,
// see keyed.go), plus JSON /sandbox endpoints to inspect what was issued. State lives in memory and is lost when the process stops.
//
// Every request is answered with HTTP 200 and an Xmlretorno whose MsgCod is
// 0 (OK), 1 (unknown EmpCodigo/EmpPK or wrong EmpCK) or 2 (invalid business
// XML); with MsgCod ≠ 0 nothing is stored. A body that is not a SOAP
// envelope carrying the operation's parameter gets a SOAP Fault (HTTP 500).
//
// Every CFEItem is validated as DGI would before anything is stored
// (ValidateCFE: totals by VAT rate to the cent, line count, amount to pay,
// TotTpoCambio exactly outside UYU, the buyer's RUT or CI check digit), and
// a credit note must reference an issued document of the type it corrects
// in the same currency, never crediting more than it; anything else is
// refused with MsgCod 2 naming the problem.
//
// Emission authorizes every document at once (CFEStatus 5) and never
// deduplicates by CFENumReferencia: emitting one reference twice issues two
// documents, which is how tests detect duplicate emissions.
//
// Faults are injected per reference with Rules (Server.SetRule, or
// PUT /sandbox/faults/{reference}): latency, HTTP 503 before acting, a
// stored document whose answer never comes in time, duplicates under one
// reference, DGI answers that stay pending, rejections, emission answers
// that describe another document than the one stored. With a Webhook
// configured, every status change is also POSTed as a signed provider
// webhook (see webhook.go).
package fiscalsim

import (
	"net/http"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// Config configures a Server. Zero values of the optional fields select the
// defaults given beside them.
type Config struct {
	// EmpCodigo and EmpPK are the only branch code and partner key accepted.
	EmpCodigo, EmpPK string
	// AccessKey is the ClaveAcceso that EmpCK hashes are keyed with.
	AccessKey string
	// Now is the clock for created_at and default issue dates. Default: time.Now.
	Now func() time.Time
	// Logger receives structured events, never fiscal data. Default: no logging.
	Logger *zap.Logger
	// Webhook, when its URL is set, receives a signed event on every status
	// change.
	Webhook Webhook
	// Profile draws faults for requests no Rule covers.
	Profile Profile
}

// Document is one CFE the simulator issued.
type Document struct {
	Reference    string        `json:"reference"`               // CFENumReferencia, the integrator's id
	Type         int           `json:"type"`                    // CFETipoCFE, e.g. 101 e-Ticket, 102 its credit note
	Series       string        `json:"series"`                  // always "A"
	Number       int           `json:"number"`                  // increasing per Type, from 1
	Status       int           `json:"status"`                  // CFEStatus; 5 authorized
	Total        string        `json:"total"`                   // TotMntPagar with two decimals
	Currency     string        `json:"currency"`                // TotTpoMoneda
	ExchangeRate string        `json:"exchange_rate,omitempty"` // TotTpoCambio, absent in UYU
	AcimaUI      string        `json:"acima_ui,omitempty"`      // CFEAcimaUI: S above the UI threshold, N at or under, absent when not sent
	Addendum     string        `json:"addendum"`                // CFEAdenda
	IssueDate    string        `json:"issue_date"`              // CFEFchEmis, YYYY-MM-DD
	CAEID        string        `json:"cae_id"`                  // CFECAEId
	CAEFrom      int           `json:"cae_from"`                // CFECAENroIni, first number the CAE authorizes
	CAETo        int           `json:"cae_to"`                  // CFECAENroFin, last number the CAE authorizes
	CAEExpires   string        `json:"cae_expires"`             // CFECAEFchVenc, YYYY-MM-DD
	SecurityCode string        `json:"security_code"`           // CFECodigoSeguridad, 6 characters
	QRCode       string        `json:"qr_code"`                 // CFEQrCode URL
	RefersTo     []DocumentRef `json:"refers_to,omitempty"`     // Referencia of credit/debit notes
	CreatedAt    time.Time     `json:"created_at"`
	Polls        int           `json:"polls"` // queries that returned it
	// Injected marks the second copy of a duplicate the sandbox made on
	// purpose (Rule.Duplicate or Profile.DuplicateRate).
	Injected bool `json:"injected,omitempty"`

	pendingLeft int // queries left before a pending document is authorized; -1 never
}

// DocumentRef is a credit or debit note's reference to the original CFE.
type DocumentRef struct {
	Type   int    `json:"type"`   // RefTpoDocRef
	Series string `json:"series"` // RefSerie
	Number int    `json:"number"` // RefNroCFERef
	Date   string `json:"date"`   // RefFechaCFEref
	Reason string `json:"reason"` // RefRazonRef
}

func (d Document) clone() Document {
	d.RefersTo = slices.Clone(d.RefersTo)
	return d
}

// Stats counts requests by outcome: Emits and Queries are requests received
// at each endpoint, Refused those answered with MsgCod ≠ 0 or a SOAP Fault,
// Injected those a fault Rule failed or held.
type Stats struct {
	Documents int `json:"documents"`
	Emits     int `json:"emits"`
	Queries   int `json:"queries"`
	Refused   int `json:"refused"`
	Injected  int `json:"injected"` // requests a fault Rule failed or held
}

// Server is the simulated InvoiCy. It is an http.Handler.
type Server struct {
	cfg Config
	log *zap.Logger
	mux *http.ServeMux

	mu      sync.Mutex
	docs    []Document  // in issue order
	numbers map[int]int // last number issued per CFE type
	stats   Stats
	rules   map[string]Rule // faults by reference or AnyReference
	byKey   map[string]int  // keyed API: index in docs of each Idempotency-Key
	index   index           // the documents by reference, type and date
	hooks   *notifier
	dice    *profileDice
}

// New returns a Server with no documents, applying Config defaults.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), numbers: make(map[int]int),
		rules: make(map[string]Rule), byKey: make(map[string]int), index: newIndex(), hooks: newNotifier(cfg.Webhook, cfg.Logger), dice: newProfileDice(cfg.Profile)}
	for _, prefix := range []string{"", "/InvoiCy"} {
		s.mux.HandleFunc("POST "+prefix+"/aws_emissionfactura.aspx", s.emit)
		s.mux.HandleFunc("POST "+prefix+"/aws_consultafactura.aspx", s.query)
	}
	s.mux.HandleFunc("GET /sandbox/documents", s.listDocuments)
	s.mux.HandleFunc("POST /sandbox/documents", s.plant)
	s.mux.HandleFunc("DELETE /sandbox/documents/{reference}", s.drop)
	s.mux.HandleFunc("POST /api/documents", s.keyedEmit)
	s.mux.HandleFunc("GET /api/documents/{key}", s.keyedGet)
	s.mux.HandleFunc("GET /sandbox/faults", s.listRules)
	s.mux.HandleFunc("PUT /sandbox/faults/{reference}", s.putRule)
	s.mux.HandleFunc("DELETE /sandbox/faults", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearRules()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("GET /sandbox/stats", func(w http.ResponseWriter, _ *http.Request) {
		server.WriteJSON(w, http.StatusOK, s.Stats())
	})
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		server.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return s
}

// ServeHTTP routes r to the SOAP, sandbox or health endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Documents returns a copy of every document issued, in issue order.
func (s *Server) Documents() []Document {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Document, len(s.docs))
	for i, d := range s.docs {
		out[i] = d.clone()
	}
	return out
}

// CountByReference returns how many documents carry CFENumReferencia ref.
func (s *Server) CountByReference(ref string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.index.byRef[ref])
}

// Stats returns the current counters, as served at GET /sandbox/stats.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Documents = len(s.docs)
	return st
}

// count updates the request counters under the lock.
func (s *Server) count(f func(*Stats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.stats)
}

// documentList is the body of GET /sandbox/documents.
type documentList struct {
	Documents   []Document     `json:"documents"`
	ByReference map[string]int `json:"by_reference"`
}

// listDocuments serves every document, or with ?reference= those carrying
// that CFENumReferencia, with a count per reference.
func (s *Server) listDocuments(w http.ResponseWriter, r *http.Request) {
	ref := r.URL.Query().Get("reference")
	list := documentList{Documents: []Document{}, ByReference: map[string]int{}}
	for _, d := range s.Documents() {
		if ref != "" && d.Reference != ref {
			continue
		}
		list.Documents = append(list.Documents, d)
		list.ByReference[d.Reference]++
	}
	server.WriteJSON(w, http.StatusOK, list)
}
