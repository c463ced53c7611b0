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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Reader reads one path of one node's kubelet.
type Reader interface {
	// Read returns the body of path on node n, or an error; ctx bounds it.
	Read(ctx context.Context, n Node, path string) ([]byte, error)
}

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

// ErrBodySizeLimit is wrapped by the error of a read whose body is larger
// than body_size_limit.
var ErrBodySizeLimit = errors.New("body larger than body_size_limit")

// refuseRedirect makes the client return a redirect as the answer: a
// kubelet never redirects a metrics path, and following one would send
// the credentials wherever the kubelet points.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// get sends req and returns the body of a 200 answer, at most limit bytes:
// a larger body fails the read, and nothing of it is kept.
func get(client *http.Client, req *http.Request, limit int64) ([]byte, error) {
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Code: resp.StatusCode}
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%w (%d bytes): Content-Length %d", ErrBodySizeLimit, limit, resp.ContentLength)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w (%d bytes)", ErrBodySizeLimit, limit)
	}
	return body, nil
}

// directReader reads <scheme>://<node address>:<port><path>.
type directReader struct {
	client *http.Client
	// scheme is https or http.
	scheme string
	// tokenFile is read for every request (the token rotates); "" sends none.
	tokenFile string
	// limit is body_size_limit.
	limit int64
}

// NewDirectReader returns a Reader that dials each node's kubelet at its
// address and kubelet port, with the TLS settings and token of cfg. The
// kubelets are verified with tls_config's CA; where it names none, or
// names the pod's CA and the agent runs outside a pod, with the CA of
// cluster, the API server's configuration (nil: the system's roots).
func NewDirectReader(cfg Config, cluster *rest.Config) (Reader, error) {
	tlsCfg := clusterCA(cfg.TLSConfig, cluster)
	tc, err := config.NewTLSConfig(&tlsCfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet tls_config: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.MaxIdleConnsPerHost = 1
	tr.Proxy = nil // node addresses are never reached through a proxy
	client := &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
	return &directReader{client: client, scheme: cfg.Scheme, tokenFile: cfg.BearerTokenFile, limit: cfg.BodySizeLimit}, nil
}

// clusterCA returns tc with the cluster's CA where tc names none, or
// names the pod's CA file and there is no such file (outside a pod).
func clusterCA(tc config.TLSConfig, cluster *rest.Config) config.TLSConfig {
	if cluster == nil || tc.CA != "" || tc.CARef != "" {
		return tc
	}
	if tc.CAFile == serviceAccountCA {
		if _, err := os.Stat(tc.CAFile); err == nil {
			return tc
		}
	} else if tc.CAFile != "" {
		return tc
	}
	tc.CAFile = ""
	switch {
	case len(cluster.CAData) > 0:
		tc.CA = string(cluster.CAData)
	case cluster.CAFile != "":
		tc.CAFile = cluster.CAFile
	}
	return tc
}

func (d *directReader) Read(ctx context.Context, n Node, path string) ([]byte, error) {
	if n.Address == "" || n.Port == 0 {
		return nil, fmt.Errorf("node %s has no address of address_types or no kubelet port: %w", n.Name, ErrNoAddress)
	}
	u := url.URL{Scheme: d.scheme, Host: n.instance(), Path: path}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("making request: %w", err)
	}
	if d.tokenFile != "" {
		tok, err := os.ReadFile(d.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading bearer_token_file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	body, err := get(d.client, req, d.limit)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u.String(), err)
	}
	return body, nil
}

// ErrNoAddress is returned for a node without an address of the
// configured types or without a kubelet port.
var ErrNoAddress = errors.New("no kubelet address")

// proxyReader reads /api/v1/nodes/<name>/proxy<path> from the API server.
type proxyReader struct {
	// urls builds the proxy URLs of the API server.
	urls rest.Interface
	// client sends the requests with the agent's credentials.
	client *http.Client
	// limit is body_size_limit.
	limit int64
}

// NewProxyReader returns a Reader that goes through the API server's node
// proxy with the agent's own credentials (RBAC: get on nodes/proxy, which
// also allows exec in any container of the node). It sends the requests
// itself rather than through client-go's request, which reads a body
// whole, whatever its size.
func NewProxyReader(cluster *rest.Config, limit int64) (Reader, error) {
	if cluster == nil {
		return nil, errors.New("kubelet mode apiserver: no API server configuration")
	}
	cfg := rest.CopyConfig(cluster)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubelet mode apiserver: %w", err)
	}
	hc.CheckRedirect = refuseRedirect
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kubelet mode apiserver: %w", err)
	}
	return &proxyReader{urls: cs.CoreV1().RESTClient(), client: hc, limit: limit}, nil
}

func (p *proxyReader) Read(ctx context.Context, n Node, path string) ([]byte, error) {
	u := p.urls.Get().AbsPath("/api/v1/nodes", n.Name, "proxy", path).URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("making request: %w", err)
	}
	body, err := get(p.client, req, p.limit)
	if err != nil {
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
	// ReasonBodySizeLimit, ReasonSampleLimit and ReasonLabelLimit are
	// reads that broke body_size_limit, sample_limit, or label_limit,
	// label_name_length_limit or label_value_length_limit.
	ReasonBodySizeLimit = "body_size_limit"
	ReasonSampleLimit   = "sample_limit"
	ReasonLabelLimit    = "label_limit"
)

// reasons are every error reason, each initialised to 0 per node.
var reasons = []string{ReasonTimeout, ReasonForbidden, ReasonStatus, ReasonConnect, ReasonParse, ReasonOther,
	ReasonBodySizeLimit, ReasonSampleLimit, ReasonLabelLimit}

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
	case errors.Is(err, ErrBodySizeLimit):
		return ReasonBodySizeLimit
	case errors.Is(err, ErrSampleLimit):
		return ReasonSampleLimit
	case errors.Is(err, ErrLabelLimit):
		return ReasonLabelLimit
	case errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.As(err, &oe), errors.Is(err, ErrNoAddress):
		return ReasonConnect
	}
	return ReasonOther
}
