package httpserver

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/onceflow/onceflow/pkg/errkind"
)

// ErrorBody is the JSON shape of every error answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail names the problem: a stable code and a human message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// NewHTTPError returns an error that answers status with code and message.
func NewHTTPError(status int, code, message string) error {
	return &echo.HTTPError{Code: status, Message: ErrorDetail{Code: code, Message: message}}
}

var kindStatus = map[errkind.Kind]int{
	errkind.Invalid:     http.StatusBadRequest,
	errkind.NotFound:    http.StatusNotFound,
	errkind.Conflict:    http.StatusConflict,
	errkind.Unavailable: http.StatusServiceUnavailable,
	errkind.Refused:     http.StatusUnprocessableEntity,
	errkind.Ambiguous:   http.StatusBadGateway,
	errkind.Internal:    http.StatusInternalServerError,
}

// handleError renders err as {"error":{"code","message"}}; only internal
// errors are logged, and their text is never shown to the caller.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, detail := s.describe(err, c)
	if err := c.JSON(status, ErrorBody{Error: detail}); err != nil {
		s.log.Warn("write error response", zap.Error(err))
	}
}

func (s *Server) describe(err error, c echo.Context) (int, ErrorDetail) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if d, ok := he.Message.(ErrorDetail); ok {
			return he.Code, d
		}
		text := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok {
			text = m
		}
		return he.Code, ErrorDetail{Code: strings.ReplaceAll(strings.ToLower(http.StatusText(he.Code)), " ", "_"), Message: text}
	}
	var ke *errkind.Error
	if errors.As(err, &ke) && ke.Kind != errkind.Internal {
		code := ke.Code
		if code == "" {
			code = ke.Kind.String()
		}
		return kindStatus[ke.Kind], ErrorDetail{Code: code, Message: ke.Message}
	}
	s.log.Error("internal error", zap.String("request_id", RequestID(c)), zap.String("method", c.Request().Method), zap.String("path", c.Path()), zap.Error(err))
	return http.StatusInternalServerError, ErrorDetail{Code: "internal", Message: "internal error"}
}
