package watch

import (
	"errors"
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig returns the client configuration for a kubeconfig path. An
// empty path means: the in-cluster service account when running in a pod,
// else $KUBECONFIG, else ~/.kube/config. Without compression the clients
// do not ask for gzip (as a kubeconfig's disable-compression does); with
// it, the kubeconfig decides.
func RESTConfig(kubeconfig string, compression bool) (*rest.Config, error) {
	cfg, err := loadRESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	if !compression {
		cfg.DisableCompression = true
	}
	return cfg, nil
}

// loadRESTConfig is RESTConfig as the kubeconfig (or the pod) gives it.
func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return cfg, nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("loading in-cluster config: %w", err)
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules() // $KUBECONFIG, then ~/.kube/config
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}

// NewClients returns the clients: a clientset that speaks protobuf to the
// API server, which costs far less to decode than JSON, a metadata-only
// client, and a dynamic one for custom resources, all reading the API
// server as batching says.
func NewClients(cfg *rest.Config, userAgent string, batching ReadBatching) (Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	if d := batching.dialer(); d != nil && cfg.Dial == nil {
		cfg.Dial = d
	}
	base := rest.CopyConfig(cfg)
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("creating Kubernetes metadata client: %w", err)
	}
	// Custom resources have no protobuf encoding: JSON.
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("creating Kubernetes dynamic client: %w", err)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("creating Kubernetes client: %w", err)
	}
	return Clients{Kube: c, Metadata: mc, Dynamic: dc, REST: base}, nil
}
