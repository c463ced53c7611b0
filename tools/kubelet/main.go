// Command hollow-kubelet runs k8s.io/kubernetes' hollow kubelet (the code
// behind cmd/kubemark --morph=kubelet: a fake CRI runtime, no cgroups) with a
// synthetic cAdvisor, so that the kubelet's own HTTP handlers, and its own
// cAdvisor Prometheus collector, serve /metrics/cadvisor for the pods bound
// to the node. It exists for kube-state-push's end-to-end tests:
// the bytes the agent reads are written by the kubelet, not by us.
//
//	hollow-kubelet --kubeconfig K --name NODE --kubelet-port P --node-ip 127.0.0.1 \
//	    [--tls-cert-file C --tls-key-file K]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubelet/server"
	"k8s.io/kubernetes/pkg/kubemark"
)

func main() {
	var (
		kubeconfig = flag.String("kubeconfig", "", "kubeconfig of the API server")
		name       = flag.String("name", "hollow-node", "node name")
		port       = flag.Int("kubelet-port", 10250, "kubelet port (status.daemonEndpoints.kubeletEndpoint.Port)")
		roPort     = flag.Int("kubelet-read-only-port", 0, "read-only port, 0 for none")
		nodeIP     = flag.String("node-ip", "127.0.0.1", "the node's InternalIP, also the bind address")
		certFile   = flag.String("tls-cert-file", "", "serve HTTPS with this certificate (plain HTTP when empty)")
		keyFile    = flag.String("tls-key-file", "", "key of --tls-cert-file")
		cores      = flag.Int("cores", 4, "cores the synthetic machine has")
	)
	klog.InitFlags(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *name, *nodeIP, *port, *roPort, *certFile, *keyFile, *cores); err != nil {
		fmt.Fprintln(os.Stderr, "hollow-kubelet:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, name, nodeIP string, port, roPort int, certFile, keyFile string, cores int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.UserAgent = "hollow-kubelet"
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making client: %w", err)
	}
	f, c := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName:            name,
		KubeletPort:         port,
		KubeletReadOnlyPort: roPort,
		MaxPods:             110,
		NodeLabels:          map[string]string{},
	})
	// GetHollowKubeletConfig made the root directory (pods, logs) in
	// $TMPDIR; nothing in it outlives the program.
	defer func() { _ = os.RemoveAll(f.RootDirectory) }()
	f.NodeIP = nodeIP
	c.Address = nodeIP
	c.NodeStatusUpdateFrequency.Duration = 2 * time.Second

	hb := *cfg
	hb.Timeout = c.NodeStatusUpdateFrequency.Duration
	hb.QPS = -1
	heartbeat, err := clientset.NewForConfig(&hb)
	if err != nil {
		return fmt.Errorf("making heartbeat client: %w", err)
	}

	endpoint, err := fakeremote.GenerateEndpoint()
	if err != nil {
		return fmt.Errorf("fake runtime endpoint: %w", err)
	}
	runtime := fakeremote.NewFakeRemoteRuntime()
	if err := runtime.Start(endpoint); err != nil {
		return fmt.Errorf("starting fake runtime: %w", err)
	}
	defer runtime.Stop()
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).
		WithConnectionTimeout(15 * time.Second).Build(ctx)
	if err != nil {
		return fmt.Errorf("runtime service: %w", err)
	}

	adv := newSyntheticCadvisor(ctx, client, name, cores)
	hk := kubemark.NewHollowKubelet(f, c, client, heartbeat, adv,
		runtime.ImageService, runtimeService, cm.NewStubContainerManager())
	if certFile != "" {
		hk.KubeletDeps.TLSOptions = &server.TLSOptions{CertFile: certFile, KeyFile: keyFile}
	}
	go hk.Run(ctx)
	<-ctx.Done()
	return nil
}
