package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The node's fixed addresses: the namespace is its own, so nothing else
// can hold them.
const (
	// NodeIP is the node's address, on a bridge without ports in the
	// node's namespace (the kernel here has no dummy driver). Pods reach
	// the API server, the kubelet and the test's receivers on it.
	NodeIP = "10.250.0.1"
	// NodeName is the Node object's name (the kubelet's
	// --hostname-override).
	NodeName = "ksp-node"
	// podCIDR is the CNI bridge's subnet; the bridge holds its first
	// address, the pods' gateway.
	podCIDR = "10.244.0.0/24"
	// kubernetesServiceIP is the kubernetes Service's ClusterIP, the first
	// of --service-cluster-ip-range: one DNAT rule stands in for
	// kube-proxy.
	kubernetesServiceIP = "10.0.0.1"
	apiServerPort       = 6443
	// KubeletPort is the kubelet's HTTPS port on NodeIP.
	KubeletPort = 10250
	// SandboxImage is containerd's sandbox_image, imported, never pulled.
	SandboxImage = "localhost/kube-state-push-pause:test"
)

// Node is a one-node Kubernetes cluster inside a network and mount
// namespace of its own: etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, containerd (runc, the CNI bridge plugin) and a
// kubelet, with pods that really run. Nothing of it is reachable from
// outside the machine, and nothing of the host is changed for good: Stop
// ends every process, restores the sysctls the kubelet sets and removes
// the cgroups it made.
//
// Inside the namespace /run, /var/lib and /var/log are the node's own
// (a tmpfs and folders in Dir), so containerd, the kubelet and the CNI
// plugins keep their default paths, which cAdvisor relies on
// (/run/containerd/containerd.sock).
type Node struct {
	// Dir holds every component's log and state.
	Dir string
	// NS is the node's namespace: run programs in it (helm, ctr) with
	// NS.Run or NS.Command.
	NS *Namespace
	// CP is the control plane; its URL, RESTConfig and Kubeconfig reach
	// the API server from the test's own namespace (through a forward).
	CP *ControlPlane
	// CAFile is the cluster CA's certificate: it signed the API server's
	// and the kubelet's serving certificates, and is every Pod's
	// service account ca.crt.
	CAFile string

	procs   []*Process // started after the control plane, stopped first
	sysctls map[string]string
	cgroups []string
	// promPort is the next port StartPrometheus gives out.
	promPort int
}

// kubeletSysctls are the settings the kubelet changes on start
// (protectKernelDefaults off); they are the host's, not the namespace's.
var kubeletSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// ErrNodeImpossible marks a reason no node can start on this machine at
// all (not root, no cgroup v1), as opposed to something missing that
// make tools installs or builds.
var ErrNodeImpossible = errors.New("no real node on this machine")

// NodeSupported says why a node cannot start here, or nil when it can: it
// needs root, cgroup v1, util-linux, iproute2, iptables, containerd, runc,
// the CNI plugins and the built kubelet, kube-scheduler and
// kube-controller-manager.
func NodeSupported() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: a real node needs root (namespaces, mounts, cgroups)", ErrNodeImpossible)
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		return fmt.Errorf("%w: no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory; the node's settings are for cgroup v1", ErrNodeImpossible)
	}
	for _, b := range []string{"unshare", "nsenter", "ip", "iptables", "containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(b); err != nil {
			return errors.New(b + " not found: scripts/install-packages.sh installs containerd, runc, iptables and the CNI plugins")
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		return errors.New("/usr/lib/cni/bridge not found: scripts/install-packages.sh installs containernetworking-plugins")
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kubelet", "kube-scheduler", "kube-controller-manager"} {
		if _, err := Binary(b); err != nil {
			return err
		}
	}
	return nil
}

// StartNode starts a one-node cluster in dir and waits until the node is
// Ready and the default ServiceAccount and kube-root-ca.crt exist. pause is
// an OCI image layout tarball (see WriteSandboxImage) imported as
// SandboxImage.
func StartNode(ctx context.Context, dir, pause string) (n *Node, err error) {
	n = &Node{Dir: dir, promPort: 9090}
	defer func() {
		if err != nil {
			n.Stop()
			n = nil
		}
	}()
	if err := n.saveSysctls(); err != nil {
		return nil, err
	}
	if n.NS, err = NewNamespace(ctx, dir); err != nil {
		return nil, err
	}
	if err := n.setUpNamespace(ctx); err != nil {
		return nil, err
	}
	ca, err := newNodeCA(dir)
	if err != nil {
		return nil, err
	}
	n.CAFile = ca.file
	if err := n.startControlPlane(ctx, ca); err != nil {
		return nil, err
	}
	if err := n.startControllers(); err != nil {
		return nil, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return nil, err
	}
	if err := n.ImportImage(ctx, pause); err != nil {
		return nil, err
	}
	if err := n.startKubelet(ca); err != nil {
		return nil, err
	}
	if err := n.waitReady(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// setUpNamespace gives the node its own /run, /var/lib and /var/log, its
// address, forwarding and the kubernetes Service's DNAT rule.
func (n *Node) setUpNamespace(ctx context.Context) error {
	for _, d := range []string{"var-lib", "var-log"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return fmt.Errorf("creating the node's %s: %w", d, err)
		}
	}
	cmds := [][]string{
		{"mount", "-t", "tmpfs", "-o", "mode=0755", "node-run", "/run"},
		{"mount", "--bind", filepath.Join(n.Dir, "var-lib"), "/var/lib"},
		{"mount", "--bind", filepath.Join(n.Dir, "var-log"), "/var/log"},
		{"ip", "link", "add", "node0", "type", "bridge"},
		{"ip", "addr", "add", NodeIP + "/24", "dev", "node0"},
		{"ip", "link", "set", "node0", "up"},
		{"sysctl", "-q", "-w", "net.ipv4.ip_forward=1"},
		{"iptables", "-t", "nat", "-A", "PREROUTING", "-d", kubernetesServiceIP, "-p", "tcp", "--dport", "443",
			"-j", "DNAT", "--to-destination", NodeIP + ":" + strconv.Itoa(apiServerPort)},
		{"iptables", "-t", "nat", "-A", "OUTPUT", "-d", kubernetesServiceIP, "-p", "tcp", "--dport", "443",
			"-j", "DNAT", "--to-destination", NodeIP + ":" + strconv.Itoa(apiServerPort)},
	}
	for _, c := range cmds {
		if _, err := n.NS.Run(ctx, c[0], c[1:]...); err != nil {
			return fmt.Errorf("setting up the node's namespace: %w", err)
		}
	}
	return nil
}

func (n *Node) startControlPlane(ctx context.Context, ca *nodeCA) error {
	etcdBin, err := Binary("etcd")
	if err != nil {
		return err
	}
	apiBin, err := Binary("kube-apiserver")
	if err != nil {
		return err
	}
	dir := n.Dir
	cp := &ControlPlane{Dir: dir, ns: n.NS, apiBin: apiBin}
	n.CP = cp
	cp.Etcd, err = n.NS.Start(dir, "etcd", etcdBin,
		"--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=default=http://127.0.0.1:2380",
		"--unsafe-no-fsync", "--log-level=warn",
	)
	if err != nil {
		return err
	}
	if err := writeServiceAccountKey(dir); err != nil {
		return err
	}
	cp.Token = randomHex(16)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(cp.Token+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return fmt.Errorf("writing token file: %w", err)
	}
	certFile, keyFile, err := ca.serving(dir, "kube-apiserver",
		[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		NodeIP, kubernetesServiceIP, "127.0.0.1")
	if err != nil {
		return err
	}
	local, err := n.NS.Forward(net.JoinHostPort(NodeIP, strconv.Itoa(apiServerPort)))
	if err != nil {
		return err
	}
	cp.URL = "https://" + local
	cp.apiArgs = apiServerArgs(dir, tokens,
		"--etcd-servers=http://127.0.0.1:2379",
		"--bind-address=0.0.0.0", "--secure-port="+strconv.Itoa(apiServerPort),
		"--advertise-address="+NodeIP,
		"--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
		"--authorization-mode=Node,RBAC",
	)
	if cp.APIServer, err = cp.startAPIServer(ctx, "kube-apiserver", cp.URL, cp.apiArgs); err != nil {
		return err
	}
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, []byte(cp.kubeconfig()), 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	// The components inside the namespace reach the API server on the
	// node's address and verify it with the CA.
	inside := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: node
  cluster: {server: "https://%s:%d", certificate-authority: %s}
users:
- name: admin
  user: {token: %s}
contexts:
- name: node
  context: {cluster: node, user: admin}
current-context: node
`, NodeIP, apiServerPort, ca.file, cp.Token)
	if err := os.WriteFile(filepath.Join(dir, "node.kubeconfig"), []byte(inside), 0o600); err != nil {
		return fmt.Errorf("writing the node's kubeconfig: %w", err)
	}
	return nil
}

func (n *Node) startControllers() error {
	kubeconfig := filepath.Join(n.Dir, "node.kubeconfig")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"kube-scheduler", []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1"}},
		{"kube-controller-manager", []string{
			"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--bind-address=127.0.0.1",
			"--service-account-private-key-file=" + filepath.Join(n.Dir, "sa.key"),
			"--root-ca-file=" + n.CAFile,
			"--controllers=*",
		}},
	} {
		bin, err := Binary(c.name)
		if err != nil {
			return err
		}
		p, err := n.NS.Start(n.Dir, c.name, bin, c.args...)
		if err != nil {
			return err
		}
		n.procs = append(n.procs, p)
	}
	return nil
}

// RESTConfig returns an admin client configuration that reaches the API
// server from the test's namespace.
func (n *Node) RESTConfig() *rest.Config { return n.CP.RESTConfig() }

// Client returns an admin clientset.
func (n *Node) Client() (kubernetes.Interface, error) { return n.CP.Client() }

// waitReady waits until the node is Ready, the default ServiceAccount of
// namespace default exists and kube-root-ca.crt is published: before that
// no Pod can start.
func (n *Node) waitReady(ctx context.Context) error {
	c, err := n.Client()
	if err != nil {
		return err
	}
	var last error
	for {
		last = func() error {
			node, err := c.CoreV1().Nodes().Get(ctx, NodeName, getOpts)
			if err != nil {
				return err
			}
			ready := false
			for _, cond := range node.Status.Conditions {
				if cond.Type == "Ready" && cond.Status == "True" {
					ready = true
				}
			}
			if !ready {
				return fmt.Errorf("node %s not Ready: %v", NodeName, node.Status.Conditions)
			}
			if _, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", getOpts); err != nil {
				return err
			}
			_, err = c.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", getOpts)
			return err
		}()
		if last == nil {
			return nil
		}
		for _, p := range n.procs {
			if p.Exited() {
				return fmt.Errorf("%s exited (%w); log %s:\n%s", p.Name, p.Err(), p.Log, p.Tail())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node not ready: %w (last: %w)", ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop ends every process of the node, pods included, restores the
// sysctls the kubelet set and removes the cgroups it made. The namespace,
// and every mount in it, goes with its last process.
func (n *Node) Stop() {
	for i := len(n.procs) - 1; i >= 0; i-- {
		if n.procs[i].Name == "kubelet" {
			n.procs[i].Stop(10 * time.Second)
		}
	}
	n.killCgroupProcs()
	for i := len(n.procs) - 1; i >= 0; i-- {
		n.procs[i].Stop(10 * time.Second)
	}
	if n.NS != nil {
		n.killNamespaceProcs()
	}
	if n.CP != nil {
		n.CP.Stop()
	}
	if n.NS != nil {
		n.NS.Close()
	}
	n.removeCgroups()
	n.restoreSysctls()
}

// killNamespaceProcs kills what containerd started and left running on
// its own (containerd-shim-runc-v2): every process still in the node's
// mount namespace but the holder and the control plane.
func (n *Node) killNamespaceProcs() {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == n.NS.Pid() || pid == os.Getpid() {
			continue
		}
		if n.CP != nil && (n.CP.Etcd != nil && pid == n.CP.Etcd.Pid() || n.CP.APIServer != nil && pid == n.CP.APIServer.Pid()) {
			continue
		}
		if n.NS.inNamespace(pid) {
			_ = syscallKill(pid)
		}
	}
}

// ImportImage imports an OCI image layout tarball into containerd's k8s.io
// namespace, under the name its index annotates
// (io.containerd.image.name), where the kubelet finds it without a pull.
func (n *Node) ImportImage(ctx context.Context, tarball string) error {
	if _, err := n.NS.Run(ctx, "ctr", "--address", containerdSocket, "--namespace", "k8s.io", "images", "import", tarball); err != nil {
		return fmt.Errorf("importing %s: %w", tarball, err)
	}
	return nil
}

// KillContainer sends SIGKILL to a container's task through containerd,
// as a crash or the OOM killer would end it: the kubelet sees it exit and
// starts it again in the same Pod. id is the container's ID as a Pod's
// status gives it (containerd://<id>) or bare.
func (n *Node) KillContainer(ctx context.Context, id string) error {
	id = strings.TrimPrefix(id, "containerd://")
	if _, err := n.NS.Run(ctx, "ctr", "--address", containerdSocket, "--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id); err != nil {
		return fmt.Errorf("killing container %s: %w", id, err)
	}
	return nil
}

// StartPrometheus starts a Prometheus with the remote-write receiver in
// the node's namespace, listening on NodeIP (where Pods reach it), with a
// configuration of the caller's. Its URL, and so Query, reach it from the
// test's namespace; InNodeURL is its address for Pods.
func (n *Node) StartPrometheus(ctx context.Context, dir, config string) (p *Prometheus, inNodeURL string, err error) {
	bin, err := Binary("prometheus")
	if err != nil {
		return nil, "", err
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return nil, "", fmt.Errorf("writing prometheus config: %w", err)
	}
	addr := net.JoinHostPort(NodeIP, strconv.Itoa(n.promPort))
	n.promPort++
	local, err := n.NS.Forward(addr)
	if err != nil {
		return nil, "", err
	}
	p = &Prometheus{URL: "http://" + local, dir: dir, bin: bin, ns: n.NS, args: []string{
		"--config.file=" + cfg,
		"--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
		"--web.listen-address=" + addr,
		"--web.enable-remote-write-receiver",
		"--log.level=warn",
	}}
	if err := p.start(ctx); err != nil {
		return nil, "", err
	}
	return p, "http://" + addr, nil
}

// Logs names the node's log files, for a failed test's message.
func (n *Node) Logs() string {
	var names []string
	for _, p := range append([]*Process{n.CP.Etcd, n.CP.APIServer}, n.procs...) {
		if p != nil {
			names = append(names, p.Log)
		}
	}
	return strings.Join(names, " ")
}
