// Package pspsim simulates dLocal's Payins API for tests and the local stack:
// signed JSON requests for payments and refunds, signed notifications with
// retries, and unauthenticated /sandbox endpoints to inspect and steer it.
// State lives in memory and is lost when the process stops.
package pspsim

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/dlocal"
	"github.com/onceflow/onceflow/pkg/httpclient"
	"github.com/onceflow/onceflow/sandbox/internal/notifier"
	"github.com/onceflow/onceflow/sandbox/internal/server"
)

// maxBody bounds every request body the simulator reads.
const maxBody = 1 << 20

// Config configures a Server. Zero values of the optional fields select the
// defaults given beside them.
type Config struct {
	// Login and TransKey are the only X-Login / X-Trans-Key values accepted.
	Login, TransKey string
	// SecretKey keys the HMAC of requests and notifications.
	SecretKey string
	// NotifyURL receives notifications of objects created without a
	// notification_url (dLocal's merchant-panel URL). Empty: none are sent.
	NotifyURL string
	// HTTPClient sends notifications. Default: a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock for created_date and X-Date. Default: time.Now.
	Now func() time.Time
	// RetryDelay is the pause between notification attempts. Default: 1 s.
	RetryDelay time.Duration
	// Logger receives structured events, never bodies. Default: no logging.
	Logger *zap.Logger
	// Faults selects injected misbehaviours of notifications.
	Faults Faults
}

// Server is the simulated PSP. It is an http.Handler; call Close when done to
// stop notifications still being retried.
type Server struct {
	cfg    Config
	client *http.Client
	log    *zap.Logger
	mux    *http.ServeMux

	notes *notifier.Notifier

	mu          sync.Mutex
	payments    map[string]*payment
	refunds     map[string]*refund
	paymentList list[*payment]
	refundList  list[*refund]

	plans            map[int64]*plan
	subscriptions    map[int64]*subscription
	executions       map[string]*execution
	lastPlan         int64
	lastSubscription int64
}

// New returns a Server with no payments, applying Config defaults.
func New(cfg Config) *Server {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = httpclient.New(10 * time.Second)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	s := &Server{
		cfg:      cfg,
		client:   cfg.HTTPClient,
		log:      cfg.Logger,
		mux:      http.NewServeMux(),
		payments: make(map[string]*payment),
		refunds:  make(map[string]*refund),

		plans:         make(map[int64]*plan),
		subscriptions: make(map[int64]*subscription),
		executions:    make(map[string]*execution),
		notes: notifier.New(notifier.Config{Faults: cfg.Faults, Schedule: dlocalSchedule,
			RetryDelay: cfg.RetryDelay, Logger: cfg.Logger}),
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.Handle("POST /payments", s.auth(s.createPayment))
	s.mux.Handle("GET /payments", s.auth(s.listPayments))
	s.mux.Handle("GET /payments/{id}", s.auth(s.getPayment))
	s.mux.Handle("POST /refunds", s.auth(s.createRefund))
	s.mux.Handle("GET /refunds", s.auth(s.listRefunds))
	s.mux.Handle("GET /refunds/{id}", s.auth(s.getRefund))
	s.mux.Handle("POST /v1/subscription/plan", s.auth(s.createPlan))
	s.mux.Handle("GET /v1/subscription/plan/all", s.auth(s.listPlans))
	s.mux.Handle("GET /v1/subscription/plan/{plan_id}/subscription/all", s.auth(s.listSubscriptions))
	s.mux.Handle("GET /v1/subscription/plan/{plan_id}/subscription/{subscription_id}/execution/all", s.auth(s.listExecutions))
	s.mux.Handle("PATCH /v1/subscription/plan/{plan_id}/subscription/{subscription_id}/deactivate", s.auth(s.deactivate))
	s.mux.Handle("GET /v1/subscription/{subscription_id}/execution/{execution_id}", s.auth(s.getExecution))
	s.mux.HandleFunc("POST /sandbox/subscriptions", s.subscribe)
	s.mux.HandleFunc("POST /sandbox/subscriptions/{id}/execute", s.execute)
	s.mux.HandleFunc("POST /sandbox/subscriptions/{id}/executions/{execution_id}/notify", s.resendExecution)
	s.mux.HandleFunc("POST /sandbox/subscriptions/{id}/executions/{execution_id}/status", s.forceExecutionStatus)
	s.mux.HandleFunc("POST /sandbox/payments/{id}/notify", s.resendPayment)
	s.mux.HandleFunc("POST /sandbox/refunds/{id}/notify", s.resendRefund)
	s.mux.HandleFunc("POST /sandbox/payments/{id}/status", s.forceStatus)
	s.mux.HandleFunc("POST /sandbox/payments/{id}/chargeback", s.chargeback)
	s.mux.HandleFunc("GET /sandbox/stats", s.stats)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		server.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// ServeHTTP routes r to the API, sandbox or health endpoints. Unrouted paths
// get a plain-text 404, as dLocal does.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close stops retrying pending notifications and waits for their goroutines.
// It is idempotent; the Server keeps answering requests but sends no more
// asynchronous notifications.
func (s *Server) Close() { s.notes.Close() }

// apiError is dLocal's error body; Status is the HTTP status it travels with.
type apiError struct {
	Status  int    `json:"-"`
	Code    int    `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

func invalidParam(param string) apiError {
	return apiError{Status: http.StatusBadRequest, Code: 5001, Message: "Invalid param " + param, Param: param}
}

var (
	errInvalidRequest  = apiError{Status: http.StatusBadRequest, Code: 5000, Message: "Invalid request"}
	errBadSignature    = apiError{Status: http.StatusBadRequest, Code: 5000, Message: "Invalid signature"}
	errBadCredentials  = apiError{Status: http.StatusForbidden, Code: 3001, Message: "Invalid credentials"}
	errPaymentNotFound = apiError{Status: http.StatusNotFound, Code: 4000, Message: "Payment not found"}
	errRefundNotFound  = apiError{Status: http.StatusNotFound, Code: 4001, Message: "Refund not found"}
	// errSubscriptionNotFound and errExecutionNotFound: codes of ours, as
	// dLocal's for these objects are unknown.
	errSubscriptionNotFound = apiError{Status: http.StatusNotFound, Code: 4010, Message: "Subscription not found"}
	errExecutionNotFound    = apiError{Status: http.StatusNotFound, Code: 4011, Message: "Execution not found"}
	errInvalidStatus        = apiError{Status: http.StatusBadRequest, Code: 5002, Message: "Invalid transaction status"}
	errAmountExceeded       = apiError{Status: http.StatusBadRequest, Code: 5007, Message: "Amount exceeded"}
	errNoNotifyURL          = apiError{Status: http.StatusBadRequest, Code: 5001, Message: "No notification URL", Param: "notification_url"}
	errInvalidCopies        = apiError{Status: http.StatusBadRequest, Code: 5001, Message: "copies must be 1..100", Param: "copies"}
)

// apiHandler handles an authenticated request whose body was already read.
type apiHandler func(w http.ResponseWriter, r *http.Request, body []byte)

// auth checks dLocal's request headers and V2-HMAC-SHA256 signature: a
// missing header is 400/5001 naming it, an unknown login or trans key is
// 403/3001, a wrong signature is 400/5000.
func (s *Server) auth(next apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range []string{dlocal.HeaderDate, dlocal.HeaderLogin, dlocal.HeaderTransKey, dlocal.HeaderAuthorization} {
			if r.Header.Get(h) == "" {
				writeError(w, apiError{Status: http.StatusBadRequest, Code: 5001, Message: "Missing header " + h, Param: h})
				return
			}
		}
		login := r.Header.Get(dlocal.HeaderLogin)
		if login != s.cfg.Login || r.Header.Get(dlocal.HeaderTransKey) != s.cfg.TransKey {
			s.log.Info("request refused: credentials", zap.String("path", r.URL.Path))
			writeError(w, errBadCredentials)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeError(w, errInvalidRequest)
			return
		}
		date := r.Header.Get(dlocal.HeaderDate)
		if err := dlocal.Verify(s.cfg.SecretKey, login, date, body, r.Header.Get(dlocal.HeaderAuthorization)); err != nil {
			s.log.Info("request refused: signature", zap.String("path", r.URL.Path), zap.Error(err))
			writeError(w, errBadSignature)
			return
		}
		next(w, r, body)
	})
}

// decodeJSON unmarshals body into v, answering 400/5000 on malformed JSON.
func decodeJSON(w http.ResponseWriter, body []byte, v any) bool {
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, errInvalidRequest)
		return false
	}
	return true
}

func writeError(w http.ResponseWriter, e apiError) { server.WriteJSON(w, e.Status, e) }

// readJSON decodes an unauthenticated sandbox request body into v; an empty
// body leaves v unchanged.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, errInvalidRequest)
		return false
	}
	if len(body) == 0 {
		return true
	}
	return decodeJSON(w, body, v)
}
