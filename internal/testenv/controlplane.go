package testenv

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ControlPlane is etcd plus kube-apiserver, with an admin token. No kubelet
// or controllers run: callers create objects and write their status.
type ControlPlane struct {
	// Dir holds data, keys, logs and the kubeconfig.
	Dir string
	// URL is the API server's https URL.
	URL string
	// Token authenticates as an admin (group system:masters).
	Token string
	// Kubeconfig is the path of a kubeconfig for the admin.
	Kubeconfig string
	// Etcd and APIServer are the running processes; RestartAPIServer
	// replaces APIServer.
	Etcd, APIServer *Process

	// apiBin and apiArgs start kube-apiserver again (restart.go).
	apiBin  string
	apiArgs []string
	// ns is the namespace the control plane runs in; nil: the test's own.
	ns *Namespace
}

// StartControlPlane starts etcd and kube-apiserver in dir and waits until
// the API server is ready.
func StartControlPlane(ctx context.Context, dir string) (*ControlPlane, error) {
	etcdBin, err := Binary("etcd")
	if err != nil {
		return nil, err
	}
	apiBin, err := Binary("kube-apiserver")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir}
	ok := false
	defer func() {
		if !ok {
			cp.Stop()
		}
	}()

	clientPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	cp.Etcd, err = Start(dir, "etcd", etcdBin,
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", "--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := cp.Etcd.waitReady(ctx, httpOK(http.DefaultClient, etcdURL+"/health", nil)); err != nil {
		return nil, err
	}

	if err := writeServiceAccountKey(dir); err != nil {
		return nil, err
	}
	cp.Token = randomHex(16)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(cp.Token+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return nil, fmt.Errorf("writing token file: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	cp.apiBin, cp.apiArgs = apiBin, apiServerArgs(dir, tokens,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--authorization-mode=RBAC",
		// No controllers run, so pods could never get their "default"
		// service account.
		"--disable-admission-plugins=ServiceAccount",
	)
	if cp.APIServer, err = cp.startAPIServer(ctx, "kube-apiserver", cp.URL, cp.apiArgs); err != nil {
		return nil, err
	}
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, []byte(cp.kubeconfig()), 0o600); err != nil {
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	ok = true
	return cp, nil
}

func (cp *ControlPlane) kubeconfig() string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
`, cp.URL, cp.Token)
}

// RESTConfig returns an admin client configuration.
func (cp *ControlPlane) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            cp.URL,
		BearerToken:     cp.Token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             200, Burst: 400,
	}
}

// Client returns an admin clientset.
func (cp *ControlPlane) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(cp.RESTConfig())
}

// Stop stops the API server, then etcd.
func (cp *ControlPlane) Stop() {
	cp.APIServer.Stop(10 * time.Second)
	cp.Etcd.Stop(10 * time.Second)
}

func writeServiceAccountKey(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding service account key: %w", err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), priv, 0o600); err != nil {
		return fmt.Errorf("writing service account key: %w", err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	if err := os.WriteFile(filepath.Join(dir, "sa.pub"), pubPEM, 0o600); err != nil {
		return fmt.Errorf("writing service account key: %w", err)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// apiServerArgs are the flags of kube-apiserver every control plane here
// shares (static tokens, service-account keys in dir, the Service range,
// protobuf storage), then extra.
func apiServerArgs(dir, tokens string, extra ...string) []string {
	return append([]string{
		"--token-auth-file=" + tokens,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--enable-priority-and-fairness=false",
		"--storage-media-type=application/vnd.kubernetes.protobuf",
	}, extra...)
}
