package agent

import "net/http"

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
