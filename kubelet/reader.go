package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/prometheus/common/config"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// Reader reads one path of one node's kubelet.
type Reader interface {
	// Read returns the body of path on node n, or an error; ctx bounds it.
	Read(ctx context.Context, n Node, path string) ([]byte, error)
}

// maxBody bounds a body read: a kubelet with thousands of containers
// serves some tens of MB.
const maxBody = 256 << 20

// accept asks for the text format, which the kubelet serves by default.
const accept = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// StatusError is a kubelet (or API server proxy) answer other than 200.
type StatusError struct {
	// Code is the HTTP status code.
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("kubelet answered %d %s", e.Code, http.StatusText(e.Code))
}

// directReader reads https://<InternalIP>:<port><path>.
type directReader struct {
	client *http.Client
	// scheme is https or http.
	scheme string
	// tokenFile is read for every request (the token rotates); "" sends none.
	tokenFile string
}

// NewDirectReader returns a Reader that dials each node's kubelet at its
// InternalIP and kubelet port, with the TLS settings and token of cfg.
func NewDirectReader(cfg Config) (Reader, error) {
	tc, err := config.NewTLSConfig(&cfg.TLSConfig)
	if err != nil {
		return nil, fmt.Errorf("kubelet tls_config: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.MaxIdleConnsPerHost = 1
	tr.Proxy = nil // node IPs are never reached through a proxy
	return &directReader{client: &http.Client{Transport: tr}, scheme: cfg.Scheme, tokenFile: cfg.BearerTokenFile}, nil
}

func (d *directReader) Read(ctx context.Context, n Node, path string) ([]byte, error) {
	if n.Address == "" || n.Port == 0 {
		return nil, fmt.Errorf("node %s has no InternalIP or kubelet port: %w", n.Name, ErrNoAddress)
	}
	u := url.URL{Scheme: d.scheme, Host: n.instance(), Path: path}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("making request: %w", err)
	}
	req.Header.Set("Accept", accept)
	if d.tokenFile != "" {
		tok, err := os.ReadFile(d.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading bearer_token_file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u.String(), err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Code: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("reading body of %s: %w", u.String(), err)
	}
	return body, nil
}

// ErrNoAddress is returned for a node without an InternalIP or kubelet port.
var ErrNoAddress = errors.New("no kubelet address")

// proxyReader reads /api/v1/nodes/<name>/proxy<path> from the API server.
type proxyReader struct {
	// client is a REST client of the core API group.
	client rest.Interface
}

// NewProxyReader returns a Reader that goes through the API server's node
// proxy with the agent's own credentials (RBAC: get on nodes/proxy).
func NewProxyReader(client rest.Interface) Reader { return &proxyReader{client: client} }

func (p *proxyReader) Read(ctx context.Context, n Node, path string) ([]byte, error) {
	body, err := p.client.Get().AbsPath("/api/v1/nodes", n.Name, "proxy", path).
		SetHeader("Accept", accept).Do(ctx).Raw()
	if err != nil {
		var se apierrors.APIStatus
		if errors.As(err, &se) && se.Status().Code != 0 {
			return nil, &StatusError{Code: int(se.Status().Code)}
		}
		return nil, fmt.Errorf("reading node %s %s through the API server: %w", n.Name, path, err)
	}
	return body, nil
}

// Error reasons of kube_state_push_kubelet_read_errors_total.
const (
	ReasonTimeout   = "timeout"
	ReasonForbidden = "forbidden"
	ReasonStatus    = "http_status"
	ReasonConnect   = "connect"
	ReasonParse     = "parse"
	ReasonOther     = "other"
)

// reasons are every error reason, each initialised to 0 per node.
var reasons = []string{ReasonTimeout, ReasonForbidden, ReasonStatus, ReasonConnect, ReasonParse, ReasonOther}

// reasonOf classifies a read error by its type.
func reasonOf(err error) string {
	var se *StatusError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	case errors.As(err, &se) && (se.Code == http.StatusForbidden || se.Code == http.StatusUnauthorized):
		return ReasonForbidden
	case errors.As(err, &se):
		return ReasonStatus
	case errors.Is(err, ErrParse):
		return ReasonParse
	case errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.As(err, &oe), errors.Is(err, ErrNoAddress):
		return ReasonConnect
	}
	return ReasonOther
}
