// Package faultproxy is a Remote-Write proxy for tests: it listens on
// 127.0.0.1, decodes every request it gets (snappy, then
// prometheus.WriteRequest), asks a schedule of rules what to do with it, does
// that, and records what it did.
//
// A request flows through Proxy.ServeHTTP: its body is read and decoded into
// a Request (number, time, size, samples); the rules are asked in order and
// the first that matches gives the Action, else the request is forwarded.
// An Action may delay, then forward to the target receiver and pass its answer
// back, answer with a status of its own (429 with Retry-After, 413, 503...),
// or close the connection without an answer. Each request ends as one Record,
// so that a test can compare the sender's counters with what the proxy saw
// and with what the receiver stored.
package faultproxy
