package problem

import (
	"errors"
	"fmt"
	"time"
)

// Error is an error a client is told about: its [Kind] chooses the status,
// Detail and Fields become the problem's detail and errors members.
type Error struct {
	Kind Kind
	// Detail explains this occurrence, for people. For a 5xx it says what
	// failed, never why: the cause belongs in the log.
	Detail string
	// Fields names each invalid field of the request, if any.
	Fields []FieldError
	// RetryAfter, when positive, is how long the client should wait,
	// for the kinds that carry a Retry-After: it is sent in whole
	// seconds, rounded up. Otherwise they send [RetryAfter].
	RetryAfter time.Duration
}

// New returns an Error of kind with detail and the invalid fields, if any.
func New(kind Kind, detail string, fields ...FieldError) *Error {
	return &Error{Kind: kind, Detail: detail, Fields: fields}
}

// Errorf returns an Error of kind whose detail is formatted as by
// [fmt.Sprintf].
func Errorf(kind Kind, format string, args ...any) *Error {
	return New(kind, fmt.Sprintf(format, args...))
}

// Error returns the detail.
func (e *Error) Error() string { return e.Detail }

// KindOf returns the Kind of the first [*Error] in err's chain, or
// [Internal] when there is none.
func KindOf(err error) Kind {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Kind
	}
	return Internal
}

// FieldError reports one invalid field of a request body or an event.
type FieldError struct {
	// Field is the JSON name of the field.
	Field string `json:"field"`
	// Detail says what is wrong with it, for people.
	Detail string `json:"detail"`
}

// Error returns "field: detail".
func (e FieldError) Error() string { return e.Field + ": " + e.Detail }
