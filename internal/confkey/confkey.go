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
