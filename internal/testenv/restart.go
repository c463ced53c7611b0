package testenv

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Restarts of the real parts, for tests of how the agent rides out a
// receiver or an API server that goes away and comes back.

// Restart starts a stopped Prometheus again on the same port with the same
// configuration and data folder, so a sender configured with WriteURL
// reaches it again and what it stored before is still there. A server
// still running is stopped first. The log of the new run replaces the old
// one.
func (p *Prometheus) Restart(ctx context.Context) error {
	p.Stop()
	if err := p.start(ctx); err != nil {
		return fmt.Errorf("restarting prometheus on %s: %w", p.URL, err)
	}
	return nil
}

// StopAPIServer stops kube-apiserver and leaves etcd running: clients get
// "connection refused" until RestartAPIServer.
func (cp *ControlPlane) StopAPIServer() { cp.APIServer.Stop(10 * time.Second) }

// RestartAPIServer starts kube-apiserver again, stopping it first if it
// runs, with the same flags: same port, certificates, tokens and etcd. Its
// watch cache starts empty, at etcd's current revision, so a watch resumed
// from an older resource version gets 410 Gone ("too old resource
// version"). The log of the new run replaces the old one.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	cp.StopAPIServer()
	p, err := cp.startAPIServer(ctx, "kube-apiserver", cp.URL, cp.apiArgs)
	if err != nil {
		return fmt.Errorf("restarting kube-apiserver on %s: %w", cp.URL, err)
	}
	cp.APIServer = p
	return nil
}

// startAPIServer runs kube-apiserver with args, logging to name.log in the
// control plane's folder, and waits until url/readyz answers the admin.
func (cp *ControlPlane) startAPIServer(ctx context.Context, name, url string, args []string) (*Process, error) {
	start := Start
	if cp.ns != nil {
		start = cp.ns.Start
	}
	p, err := start(cp.Dir, name, cp.apiBin, args...)
	if err != nil {
		return nil, err
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server on loopback
	defer insecure.CloseIdleConnections()
	auth := http.Header{"Authorization": {"Bearer " + cp.Token}}
	if err := p.waitReady(ctx, httpOK(insecure, url+"/readyz", auth)); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// ExtraAPIServer is a second kube-apiserver on a control plane's etcd, with
// the same tokens: a way to change objects while the control plane's own
// API server is down, which its clients then find changed when it is back.
type ExtraAPIServer struct {
	// URL is the API server's https URL.
	URL string
	// Proc is the running process.
	Proc *Process
	// token authenticates as the control plane's admin.
	token string
}

// StartExtraAPIServer starts another kube-apiserver on the control plane's
// etcd, on a free port, with the control plane's flags followed by flags
// (later flags win, e.g. "--etcd-compaction-interval=1s"). Its certificates
// go to a folder of its own; its log is kube-apiserver-extra-PORT.log.
func (cp *ControlPlane) StartExtraAPIServer(ctx context.Context, flags ...string) (*ExtraAPIServer, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	args := append(append([]string(nil), cp.apiArgs...),
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(cp.Dir, "certs-extra-"+strconv.Itoa(port)),
	)
	args = append(args, flags...)
	p, err := cp.startAPIServer(ctx, "kube-apiserver-extra-"+strconv.Itoa(port), url, args)
	if err != nil {
		return nil, fmt.Errorf("starting an extra kube-apiserver on %s: %w", url, err)
	}
	return &ExtraAPIServer{URL: url, Proc: p, token: cp.Token}, nil
}

// Client returns an admin clientset for the extra API server.
func (s *ExtraAPIServer) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(&rest.Config{
		Host:            s.URL,
		BearerToken:     s.token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             200, Burst: 400,
	})
}

// Stop stops the extra API server.
func (s *ExtraAPIServer) Stop() { s.Proc.Stop(10 * time.Second) }
