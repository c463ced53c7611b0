package queue

import (
	"context"
	"math/rand/v2"
	"net"
	"time"

	"github.com/prometheus/common/config"
)

// round_robin_dns, as Prometheus' remote write does it
// (storage/remote/dial_context.go, unexported there): each new connection
// looks the host up and dials one of its addresses at random, so that an
// endpoint behind several A/AAAA records gets connections spread over all
// of them, where Go's dialer would try the addresses in turn and mostly
// land on the first. A failed look-up, no address, or an address that
// does not split into host and port falls back to dialing it as given. An
// address picked that refuses the connection is not retried on another:
// the request fails and is retried as any network error is.

// hostResolver looks host names up; *net.Resolver is one.
type hostResolver interface {
	// LookupHost returns the addresses of host.
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// roundRobinDialer dials a random address of a host's.
type roundRobinDialer struct {
	// dial makes the connection, to an address or a name.
	dial config.DialContextFunc
	// resolver looks the host up.
	resolver hostResolver
}

// newRoundRobinDialer returns a dialer whose connections are made as
// prometheus/common's HTTP client makes them by default (and Prometheus'
// round-robin dialer, through http.DefaultTransport): 30s connect timeout,
// 30s TCP keep-alive.
func newRoundRobinDialer(r hostResolver) *roundRobinDialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &roundRobinDialer{dial: d.DialContext, resolver: r}
}

// DialContext dials addr ("host:port") through a random address of host.
func (d *roundRobinDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return d.dial(ctx, network, addr)
	}
	addrs, err := d.resolver.LookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return d.dial(ctx, network, addr)
	}
	return d.dial(ctx, network, net.JoinHostPort(addrs[rand.IntN(len(addrs))], port))
}
