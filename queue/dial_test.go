package queue

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// stubResolver answers look-ups from a table and counts them.
type stubResolver struct {
	// mu guards calls.
	mu sync.Mutex
	// hosts maps a host to its addresses; a host missing is an error.
	hosts map[string][]string
	// calls counts look-ups.
	calls int
}

func (r *stubResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	addrs, ok := r.hosts[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

var errDialRecorded = errors.New("dial recorded")

func TestRoundRobinDialer(t *testing.T) {
	res := &stubResolver{hosts: map[string][]string{
		"receiver.test": {"10.0.0.1", "10.0.0.2", "fd00::3"},
		"empty.test":    {},
	}}
	var dialed []string
	d := &roundRobinDialer{resolver: res, dial: func(_ context.Context, _, addr string) (net.Conn, error) {
		dialed = append(dialed, addr)
		return nil, errDialRecorded
	}}
	seen := map[string]int{}
	for range 300 {
		_, err := d.DialContext(t.Context(), "tcp", "receiver.test:9090")
		require.ErrorIs(t, err, errDialRecorded)
		seen[dialed[len(dialed)-1]]++
	}
	require.Len(t, seen, 3, "every address is picked: %v", seen)
	for _, a := range []string{"10.0.0.1:9090", "10.0.0.2:9090", "[fd00::3]:9090"} {
		require.Positive(t, seen[a], a)
	}

	// A failed look-up, no address or no port: dialed as given.
	for _, addr := range []string{"unknown.test:9090", "empty.test:9090", "receiver.test"} {
		_, err := d.DialContext(t.Context(), "tcp", addr)
		require.ErrorIs(t, err, errDialRecorded)
		require.Equal(t, addr, dialed[len(dialed)-1])
	}
}

// With round_robin_dns, the endpoint's client spreads its connections over
// the host's addresses (two loopback listeners on one port); without, it
// never looks the host up itself.
func TestRoundRobinDNSClient(t *testing.T) {
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l1.Addr().(*net.TCPAddr).Port
	l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", itoa(port)))
	if err != nil {
		_ = l1.Close()
		t.Skipf("no second loopback address: %v", err)
	}
	var mu sync.Mutex // guards hits and hosts
	hits := map[string]int{}
	hosts := map[string]bool{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local := r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
		mu.Lock()
		hits[local]++
		hosts[r.Host] = true
		mu.Unlock()
		w.Header().Set("Connection", "close") // every request dials anew
		w.WriteHeader(http.StatusNoContent)
	})
	for _, l := range []net.Listener{l1, l2} {
		srv := &http.Server{Handler: handler}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
	}

	res := &stubResolver{hosts: map[string][]string{"receiver.test": {"127.0.0.1", "127.0.0.2"}}}
	get := func(t *testing.T, cfg *Config, url string, n int) {
		t.Helper()
		hc, err := newHTTPClient(cfg, res)
		require.NoError(t, err)
		for range n {
			resp, err := hc.Get(url)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())
		}
	}

	c, err := decodeEntry(t, "url: http://receiver.test/api/v1/write\nround_robin_dns: true\n")
	require.NoError(t, err)
	require.True(t, c.RoundRobinDNS)
	url := "http://receiver.test:" + itoa(port) + "/api/v1/write"
	get(t, &c, url, 40)
	mu.Lock()
	require.Len(t, hits, 2, "both addresses are dialed: %v", hits)
	require.Equal(t, map[string]bool{"receiver.test:" + itoa(port): true}, hosts, "the Host header keeps the name")
	mu.Unlock()
	require.Equal(t, 40, res.calls, "one look-up per connection")

	// Off (the default): the resolver is never asked.
	c, err = decodeEntry(t, "url: http://127.0.0.1/api/v1/write\n")
	require.NoError(t, err)
	require.False(t, c.RoundRobinDNS)
	get(t, &c, "http://127.0.0.1:"+itoa(port)+"/", 3)
	require.Equal(t, 40, res.calls)
}

func itoa(i int) string { return strconv.Itoa(i) }
