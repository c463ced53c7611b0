package agent

import (
	"net/http"
	"time"
)

// serverTimeouts bound how long one connection may hold a server: a client
// that sends its request, or reads the answer, slowly (or never) is cut
// off instead of holding a goroutine and, on the pull page, the series
// sets it has not read yet.
type serverTimeouts struct {
	// readHeader and read bound reading the request: its headers, and all
	// of it (no request the agent serves has more than an empty body).
	readHeader, read time.Duration
	// write bounds the answer, from the end of the request's headers.
	write time.Duration
	// idle closes a keep-alive connection no request used for that long.
	idle time.Duration
}

// The servers' timeouts. The self-metrics page is small and written at
// once; a CPU profile or an execution trace is written only after the
// duration it was asked for, which Go's pprof handlers refuse when it is
// not below the server's write timeout: with profiles served, the write
// timeout allows one of up to five minutes. The pull page is written while
// it is rendered, about 100 MiB of text for 10,000 pods (read in under a
// second on loopback): two minutes let a scraper read it uncompressed at
// 7 Mbit/s, past any scrape_timeout a scrape of it is given.
var (
	metricsTimeouts = serverTimeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: time.Minute, idle: 2 * time.Minute}
	pprofTimeouts   = serverTimeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: 5*time.Minute + 30*time.Second, idle: 2 * time.Minute}
	pullTimeouts    = serverTimeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: 2 * time.Minute, idle: 2 * time.Minute}
)

// server returns an http.Server for h with the timeouts t.
func (t serverTimeouts) server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.readHeader, ReadTimeout: t.read, WriteTimeout: t.write, IdleTimeout: t.idle}
}

// lifecycleNotEnabled is Prometheus' answer (web/web.go) to a
// state-changing request without --web.enable-lifecycle.
const lifecycleNotEnabled = "Lifecycle API is not enabled."

// lifecycleOnly guards a state-changing endpoint as Prometheus guards
// /-/reload and /-/quit: unless enabled, POST and PUT answer 403 with
// Prometheus' text; other methods reach h, which refuses them. Reloading
// by SIGHUP needs no flag: sending a signal already takes the right to
// the process.
func lifecycleOnly(enabled bool, h http.HandlerFunc) http.HandlerFunc {
	if enabled {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost || r.Method == http.MethodPut {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(lifecycleNotEnabled))
			return
		}
		h(w, r)
	}
}
