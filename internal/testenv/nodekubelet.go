package testenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerdSocket is where the kubelet's built-in cAdvisor looks for
// containerd: elsewhere, /metrics/cadvisor has no pod, namespace or
// container labels.
const containerdSocket = "/run/containerd/containerd.sock"

var getOpts = metav1.GetOptions{}

// startContainerd writes containerd's and the CNI's configuration and
// starts containerd in the namespace.
func (n *Node) startContainerd(ctx context.Context) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("runc not found: %w", err)
	}
	cniDir := filepath.Join(n.Dir, "cni")
	if err := os.MkdirAll(cniDir, 0o755); err != nil {
		return fmt.Errorf("creating the CNI configuration folder: %w", err)
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "ksp-pods",
  "plugins": [{
    "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
`, podCIDR)
	if err := os.WriteFile(filepath.Join(cniDir, "10-ksp-pods.conflist"), []byte(conflist), 0o600); err != nil {
		return fmt.Errorf("writing the CNI configuration: %w", err)
	}
	// restrict_oom_score_adj: runc cannot lower a score without
	// CAP_SYS_RESOURCE, which a VM like this one's root lacks; every
	// sandbox would fail with "can't get final child's PID from pipe".
	config := fmt.Sprintf(`version = 2
root = %q
state = "/run/containerd"
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, filepath.Join(n.Dir, "containerd"), containerdSocket, SandboxImage, runc, cniDir)
	cfg := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return fmt.Errorf("writing containerd's configuration: %w", err)
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return fmt.Errorf("containerd not found: %w", err)
	}
	p, err := n.NS.Start(n.Dir, "containerd", bin, "--config", cfg)
	if err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	return p.waitReady(ctx, func(ctx context.Context) error {
		_, err := n.NS.Run(ctx, "ctr", "--address", containerdSocket, "version")
		return err
	})
}

// startKubelet writes the kubelet's configuration and starts it. Each
// setting away from the defaults is there for this kind of machine (cgroup
// v1, no systemd, no CAP_SYS_RESOURCE) or for the test (webhook
// authorization, as on a real cluster, so that nodes/metrics is needed).
func (n *Node) startKubelet(ca *nodeCA) error {
	certFile, keyFile, err := ca.serving(n.Dir, "kubelet", []string{NodeName}, NodeIP)
	if err != nil {
		return err
	}
	root, err := n.makeCgroupRoot()
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %q
oomScoreAdj: 0
resolvConf: ""
failSwapOn: false
containerRuntimeEndpoint: unix://%s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
tlsCertFile: %q
tlsPrivateKeyFile: %q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
authorization:
  mode: Webhook
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
`, root, containerdSocket, KubeletPort, certFile, keyFile)
	cfg := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		return fmt.Errorf("writing the kubelet's configuration: %w", err)
	}
	bin, err := Binary("kubelet")
	if err != nil {
		return err
	}
	p, err := n.NS.Start(n.Dir, "kubelet", bin,
		"--config="+cfg,
		"--kubeconfig="+filepath.Join(n.Dir, "node.kubeconfig"),
		"--hostname-override="+NodeName, "--node-ip="+NodeIP,
		"--v=1")
	if err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	return nil
}

// makeCgroupRoot creates the kubelet's cgroupRoot, a folder of the node's
// own in every cgroup hierarchy, so that everything the kubelet makes
// is under it and removeCgroups finds it (and two nodes never share
// kubepods).
func (n *Node) makeCgroupRoot() (string, error) {
	name := "ksp-node-" + randomHex(4)
	mounts, err := cgroupMounts()
	if err != nil {
		return "", err
	}
	for _, m := range mounts {
		d := filepath.Join(m, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", fmt.Errorf("creating cgroup %s: %w", d, err)
		}
		n.cgroups = append(n.cgroups, d)
		if filepath.Base(m) == "cpuset" {
			// A new cpuset cgroup starts with no CPUs and no memory nodes.
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(m, f))
				if err != nil {
					return "", fmt.Errorf("reading %s: %w", f, err)
				}
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return "", fmt.Errorf("writing %s: %w", f, err)
				}
			}
		}
	}
	return "/" + name, nil
}

// cgroupMounts lists the mount points of the cgroup hierarchies: v1, and
// the v2 one a hybrid host mounts too, where the kubelet also makes its own.
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 3 && (fields[2] == "cgroup" || fields[2] == "cgroup2") {
			out = append(out, fields[1])
		}
	}
	return out, s.Err()
}

// killCgroupProcs kills every process in the node's cgroups: the pods'
// containers.
func (n *Node) killCgroupProcs() {
	for _, root := range n.cgroups {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscallKill(pid)
				}
			}
			return nil
		})
	}
}

// removeCgroups removes the node's cgroups, deepest first; a cgroup whose
// processes are still exiting is tried again for a few seconds.
func (n *Node) removeCgroups() {
	deadline := time.Now().Add(10 * time.Second)
	for _, root := range n.cgroups {
		for {
			var dirs []string
			_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
			var failed error
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
					failed = err
				}
			}
			if failed == nil || time.Now().After(deadline) {
				if failed != nil {
					fmt.Fprintf(os.Stderr, "testenv: cgroup %s left behind: %v\n", root, failed)
				}
				break
			}
			n.killCgroupProcs()
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func (n *Node) saveSysctls() error {
	n.sysctls = map[string]string{}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return fmt.Errorf("reading sysctl %s: %w", k, err)
		}
		n.sysctls[k] = strings.TrimSpace(string(b))
	}
	return nil
}

// restoreSysctls writes back what the kubelet changed: kernel.panic_on_oops
// left at 1 turns any later kernel oops on this machine into a reboot.
func (n *Node) restoreSysctls() {
	for k, v := range n.sysctls {
		b, err := os.ReadFile("/proc/sys/" + k)
		if err == nil && strings.TrimSpace(string(b)) == v {
			continue
		}
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: restoring sysctl %s=%s: %v\n", k, v, err)
		}
	}
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
