// Package redact masks credentials in what the agent prints: URLs (the
// userinfo password and every query value), errors that quote a URL, and
// maps of header or parameter values.
//
// A URL can carry a credential in two places: the password of its userinfo
// (https://user:password@host/) and its query string (?api_key=...). Both
// are masked with Mask, keeping the names (user, parameter names) a person
// needs to tell endpoints apart. A URL that does not parse is never quoted:
// its parse error is reduced to the reason, without the quoted parts.
package redact

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces a credential in a URL. It is Go's own (url.URL.Redacted)
// and prometheus/common's choice, and needs no escaping.
const Mask = "xxxxx"

// Secret replaces a secret value that is not part of a URL, as
// prometheus/common's config.Secret prints.
const Secret = "<secret>"

// URL returns raw with its userinfo password and every query value masked.
// A URL that does not parse gives "<invalid URL>": its text may hold the
// credential that made it invalid.
func URL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid URL>"
	}
	return Parsed(u).String()
}

// Parsed returns a copy of u with its userinfo password and every query
// value masked; nil gives nil. A fragment is masked too: it is not sent,
// but a pasted URL may carry a token there.
func Parsed(u *url.URL) *url.URL {
	if u == nil {
		return nil
	}
	c := *u
	if _, ok := c.User.Password(); ok {
		c.User = url.UserPassword(c.User.Username(), Mask)
	}
	if c.RawQuery != "" {
		c.RawQuery = maskQuery(c.RawQuery)
	}
	if c.Fragment != "" || c.RawFragment != "" {
		c.Fragment, c.RawFragment = Mask, ""
	}
	return &c
}

// maskQuery masks the value of every parameter of a raw query, keeping the
// names and their order. It splits the raw text itself, so that a query
// url.ParseQuery refuses is masked too.
func maskQuery(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		if hasValue {
			parts[i] = name + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// quotedRE matches a %q-quoted string in an error message.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// ParseError says why a URL did not parse without quoting any of it:
// url.Parse's *url.Error holds the whole URL, and its reasons quote the
// offending part (`invalid port ":x" after host`), perhaps a password.
func ParseError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := quotedRE.ReplaceAllString(err.Error(), "")
	return strings.Join(strings.Fields(msg), " ")
}

// Error returns err with every URL it quotes masked, or nil for nil.
// net/http's client quotes the request's URL in its errors (without the
// password, but with the query), and an OAuth 2.0 token request's error is
// wrapped inside the endpoint request's, its text frozen by fmt.Errorf. So
// the URL of every *url.Error in the chain is masked in place, and the
// message is masked as text; errors.Is and errors.As still see the chain.
func Error(err error) error {
	if err == nil {
		return nil
	}
	walk(err, func(e error) {
		if ue, ok := e.(*url.Error); ok { //nolint:errorlint // walk visits every error of the tree
			ue.URL = URL(ue.URL)
		}
	})
	msg := err.Error()
	masked := Text(msg)
	if masked == msg {
		return err
	}
	return &maskedError{msg: masked, err: err}
}

// maskedError is an error whose message had a URL masked.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// urlRE matches an absolute URL in free text, up to a space or a quote.
var urlRE = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s"'<>` + "`" + `]+`)

// Text masks every absolute URL in s.
func Text(s string) string {
	return urlRE.ReplaceAllStringFunc(s, func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return "<invalid URL>"
		}
		return Parsed(u).String()
	})
}

// walk calls f on every error in err's tree.
func walk(err error, f func(error)) {
	for depth := 0; err != nil && depth < 100; depth++ {
		f(err)
		switch u := err.(type) { //nolint:errorlint // this is the unwrapping
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, f)
			}
			return
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return
		}
	}
}

// Headers returns a copy of h with the value of every header not named in
// public (case-insensitive, as HTTP header names are) replaced by Secret.
func Headers(h map[string]string, public []string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for name, v := range h {
		if slices.ContainsFunc(public, func(p string) bool { return http.CanonicalHeaderKey(p) == http.CanonicalHeaderKey(name) }) {
			out[name] = v
			continue
		}
		out[name] = Secret
	}
	return out
}

// Values returns a copy of m with every value replaced by Secret.
func Values(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = Secret
	}
	return out
}
