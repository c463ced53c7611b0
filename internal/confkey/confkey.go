// Package confkey carries configuration errors that name the YAML key they
// are about, so that the loader can point at the key's line.
//
// Each package validates its own Config and reports problems with [Errorf],
// using its keys relative to where its Config sits; the composing Config
// wraps them with [Under] to make the path absolute
// (e.g. "remote_write[0].queue_config.max_shards").
package confkey

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error is a problem with the value at one configuration key.
type Error struct {
	// Key is the dotted path of the key, e.g. "remote_write[1].url".
	Key string
	// Err says what is wrong.
	Err error
}

func (e *Error) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the underlying problem.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an error about the value at key.
func Errorf(key, format string, args ...any) error {
	return &Error{Key: key, Err: fmt.Errorf(format, args...)}
}

// Under prefixes the key of every key error in err with parent, so that a
// package's relative keys become absolute. Errors without a key get parent as
// their key.
func Under(parent string, err error) error {
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		var ke *Error
		if errors.As(e, &ke) {
			out = append(out, &Error{Key: join(parent, ke.Key), Err: ke.Err})
			continue
		}
		out = append(out, &Error{Key: parent, Err: e})
	}
	return errors.Join(out...)
}

// Index returns the key of element i of a list key: "remote_write[2]".
func Index(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

func join(parent, key string) string {
	switch {
	case parent == "":
		return key
	case key == "":
		return parent
	case key[0] == '[':
		return parent + key
	}
	return parent + "." + key
}

// secretLeaves are keys whose value is a secret (prometheus/common's
// config.Secret fields, and http_headers' and proxy_connect_header's
// secrets; sigv4's secret_key, azuread's oauth.client_secret and
// certificate.certificate_password), and google_iam's credentials_file: a
// path, but a mapping typed in its place is likely the service account key
// pasted whole, whose fields an error must not name.
var secretLeaves = map[string]bool{
	"password": true, "credentials": true, "client_secret": true, "client_certificate_key": true,
	"bearer_token": true, "key": true, "secrets": true, "secret_key": true, "certificate_password": true,
	"credentials_file": true,
}

// secretMaps are maps from a name, which is not secret, to a value that may
// be: headers, proxy_connect_header and oauth2.endpoint_params.
var secretMaps = map[string]bool{"headers": true, "proxy_connect_header": true, "endpoint_params": true}

// secretParents hold secrets below them; a value of the wrong type given
// to them (a string where the mapping goes) is often the secret itself.
var secretParents = map[string]bool{
	"basic_auth": true, "authorization": true, "oauth2": true, "http_headers": true, "tls_config": true,
	"sigv4": true, "azuread": true, "google_iam": true,
}

// Secret reports whether key is, or lies inside, a key that holds secrets,
// and returns key cut where the secret begins: below a secret, and below
// the name in a map of secret values, the map keys are what a person
// typed, perhaps the secret itself, so an error must not name them.
// "remote_write[0].basic_auth.password.hunter2" gives
// "remote_write[0].basic_auth.password", true.
func Secret(key string) (cut string, secret bool) {
	named := false // the segment before was one of secretMaps
	for i := 0; i < len(key); {
		if key[i] == '.' {
			i++
			continue
		}
		j := len(key)
		if key[i] == '[' {
			if k := strings.IndexByte(key[i:], ']'); k >= 0 {
				j = i + k + 1
			}
			i = j
			continue // an index is never secret
		}
		if k := strings.IndexAny(key[i:], ".["); k >= 0 {
			j = i + k
		}
		seg := key[i:j]
		switch {
		case named, secretLeaves[seg]:
			return key[:j], true
		case secretMaps[seg]:
			secret, named = true, true
		case secretParents[seg]:
			secret = true
		}
		i = j
	}
	return key, secret
}
