// Package errkind is the small vocabulary of error kinds shared by every
// service: stores translate driver errors into kinds, and the HTTP layer maps
// kinds to statuses.
package errkind

import (
	"errors"
	"fmt"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

// The kinds. Internal is the zero value so an unclassified error is internal.
const (
	Internal    Kind = iota // a bug or an unexpected failure; logged, not shown
	Invalid                 // the input is wrong; the caller must change it
	NotFound                // the thing asked for does not exist
	Conflict                // the request clashes with the current state
	Unavailable             // a dependency is down; retrying later may work
	Refused                 // understood and refused on its merits (by a provider or by us); the same request will not succeed later
	Ambiguous               // a call may or may not have taken effect; look up before trying again
)

// String returns the kind's code as used in JSON error bodies.
func (k Kind) String() string {
	switch k {
	case Invalid:
		return "invalid"
	case NotFound:
		return "not_found"
	case Conflict:
		return "conflict"
	case Unavailable:
		return "unavailable"
	case Refused:
		return "refused"
	case Ambiguous:
		return "ambiguous"
	default:
		return "internal"
	}
}

// Error is an error with a kind and a message safe to show to the caller.
// Code, when set, is a finer code than the kind's for the JSON body (e.g.
// "invalid_limit" of kind Invalid); the kind alone decides the HTTP status.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Err     error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the wrapped cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind k with a caller-safe message.
func New(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Coded returns an error of kind k with a finer code for the JSON body and a
// caller-safe message.
func Coded(k Kind, code, format string, args ...any) error {
	return &Error{Kind: k, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error of kind k with a caller-safe message and a cause.
func Wrap(k Kind, err error, message string) error {
	return &Error{Kind: k, Message: message, Err: err}
}

// Of returns the kind of the first *Error in err's chain, or Internal.
func Of(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err's kind (see Of) is k.
func Is(err error, k Kind) bool { return err != nil && Of(err) == k }
