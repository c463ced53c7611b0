package faultproxy

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/prometheus/prompb"
)

// Action is what the proxy does with one request: wait Delay, then forward
// it (Status 0), answer with Status, or close the connection (Close).
type Action struct {
	// Delay is how long to hold the request before acting. A client that
	// gives up meanwhile gets nothing forwarded (the record says Abandoned).
	Delay time.Duration
	// Status, when not 0, is the answer the proxy gives instead of
	// forwarding.
	Status int
	// Header is added to an answer of the proxy's own.
	Header http.Header
	// RetryAfterDate, when positive, sets the answer's Retry-After header to
	// the HTTP date this long after the answer is written, rounded up to the
	// next whole second (HTTP dates have no finer resolution).
	RetryAfterDate time.Duration
	// Close hijacks the connection and closes it without an answer.
	Close bool
	// Detach carries the action out even when the client goes away during
	// the Delay, and forwards without the client's cancellation: a
	// receiver that got a request just before its sender died stores it.
	Detach bool
}

// Forward passes the request to the target and its answer back.
func Forward() Action { return Action{} }

// Respond answers with status and a short body naming the proxy.
func Respond(status int) Action { return Action{Status: status} }

// RetryAfterSeconds answers with status (429 or 503) and a Retry-After
// header of d in whole seconds (rounded up).
func RetryAfterSeconds(status int, d time.Duration) Action {
	secs := int((d + time.Second - 1) / time.Second)
	return Action{Status: status, Header: http.Header{"Retry-After": {strconv.Itoa(secs)}}}
}

// RetryAfterDate answers with status (429 or 503) and a Retry-After header
// holding the HTTP date d after the answer, rounded up to a whole second.
func RetryAfterDate(status int, d time.Duration) Action {
	return Action{Status: status, RetryAfterDate: d}
}

// CloseConnection closes the connection without an answer, after reading
// the request.
func CloseConnection() Action { return Action{Close: true} }

// Hold holds the request for d, then forwards it even if its client has
// gone meanwhile: a slow receiver.
func Hold(d time.Duration) Action { return Action{Delay: d, Detach: true} }

// After returns a with a delay of d before it is carried out.
func (a Action) After(d time.Duration) Action {
	a.Delay = d
	return a
}

// Rule decides what to do with a request: it returns the Action and true
// when it applies, false to leave the request to the next rule. The proxy
// calls the rules of a schedule one request at a time, in arrival order, so
// a rule may keep state.
type Rule func(r *Request) (Action, bool)

// Always applies a to every request.
func Always(a Action) Rule {
	return func(*Request) (Action, bool) { return a, true }
}

// Requests applies a to the requests numbered from to to (1-based, in
// arrival order, inclusive).
func Requests(from, to int, a Action) Rule {
	return func(r *Request) (Action, bool) {
		return a, r.Seq >= from && r.Seq <= to
	}
}

// During applies a to the requests that arrive between from and to after the
// proxy started (from inclusive, to exclusive).
func During(from, to time.Duration, a Action) Rule {
	return func(r *Request) (Action, bool) {
		return a, r.At >= from && r.At < to
	}
}

// BodyOver applies a to requests whose body (as sent, compressed) is larger
// than n bytes: a receiver's request size limit, with Respond(413).
func BodyOver(n int, a Action) Rule {
	return func(r *Request) (Action, bool) {
		return a, r.BodyBytes > n
	}
}

// When applies a to the requests match accepts.
func When(match func(*Request) bool, a Action) Rule {
	return func(r *Request) (Action, bool) {
		return a, match(r)
	}
}

// Nth gives the k-th request that match accepts actions[k-1], for k up to
// len(actions); later ones are left to the next rules. Requests that other
// rules before it took are not seen, so not counted.
func Nth(match func(*Request) bool, actions ...Action) Rule {
	n := 0
	return func(r *Request) (Action, bool) {
		if n >= len(actions) || !match(r) {
			return Action{}, false
		}
		n++
		return actions[n-1], true
	}
}

// HasSamples accepts requests that carry at least one sample (not, say, a
// metadata-only request).
func HasSamples(r *Request) bool { return r.Samples > 0 }

// HasSeries returns a match for requests holding a series whose labels
// include every name and value of want.
func HasSeries(want map[string]string) func(*Request) bool {
	return func(r *Request) bool {
		if r.Write == nil {
			return false
		}
		for _, ts := range r.Write.Timeseries {
			if labelsInclude(ts.Labels, want) {
				return true
			}
		}
		return false
	}
}

// labelsInclude reports whether ls holds every name and value of want.
func labelsInclude(ls []prompb.Label, want map[string]string) bool {
	found := 0
	for _, l := range ls {
		if v, ok := want[l.Name]; ok {
			if v != l.Value {
				return false
			}
			found++
		}
	}
	return found == len(want)
}
