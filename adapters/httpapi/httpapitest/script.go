package httpapitest

import (
	"fmt"
	"sync"
)

// Script is the memory of the scripted fakes of a handler package's use
// cases: what each method returns, and the arguments of every call. A
// method called without a scripted result returns an error, which the
// ErrorHandler answers with 500, so a test that did not expect the call
// fails on its status.
type Script struct {
	mu      sync.Mutex
	returns map[string]Result
	calls   map[string][][]any
}

// Result is what a scripted method returns: its values in order, then err.
type Result struct {
	Values []any
	Err    error
}

// NewScript scripts each method's result ("Agents.Get": ...).
func NewScript(returns map[string]Result) *Script {
	return &Script{returns: returns, calls: map[string][][]any{}}
}

// Call records a call of method with args and returns its scripted result.
func (s *Script) Call(method string, args ...any) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method] = append(s.calls[method], args)
	r, ok := s.returns[method]
	if !ok {
		return Result{Err: fmt.Errorf("httpapitest: unscripted call to %s", method)}
	}
	return r
}

// CallOr is Call for a method the test may leave unscripted: it then
// returns otherwise.
func (s *Script) CallOr(otherwise Result, method string, args ...any) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method] = append(s.calls[method], args)
	if r, ok := s.returns[method]; ok {
		return r
	}
	return otherwise
}

// Calls are the arguments of every call of method, in order.
func (s *Script) Calls(method string) [][]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Value is the result's i-th value as a T, or T's zero value when the
// script left it out.
func Value[T any](r Result, i int) T {
	var zero T
	if i >= len(r.Values) || r.Values[i] == nil {
		return zero
	}
	return r.Values[i].(T)
}
