package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-state-push/kube-state-push/internal/ociimage"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// The real-node tests share one node (testenv.Node): a real kubelet,
// containerd and runc running the agent's image as a Pod, in a namespace
// of the node's own. Each test installs into its own Kubernetes namespace.

// chartDir is the Helm chart the real-node tests install.
const chartDir = "../deploy/helm/kube-state-push"

// realNode is the node of sharedNode, started on first use and stopped by
// TestMain (stopRealNode).
var realNode struct {
	once sync.Once
	// mu guards the fields below after once.
	mu   sync.Mutex
	node *testenv.Node
	err  error
	// image is the agent image's name as the chart renders it by default,
	// imported into the node's containerd.
	image string
}

// sharedNode returns the shared node, starting it on first use. Without
// root or cgroup v1 the test is skipped; without the Debian packages or
// the built binaries too, except in CI, where make test provides them.
func sharedNode(t *testing.T) *testenv.Node {
	t.Helper()
	needEnv(t)
	if err := testenv.NodeSupported(); err != nil {
		// In CI make test installs and builds what is missing.
		if os.Getenv("CI") == "true" && !errors.Is(err, testenv.ErrNodeImpossible) {
			t.Fatalf("a real node cannot start in CI: %v", err)
		}
		t.Skip(err)
	}
	if _, err := testenv.Binary("helm"); err != nil {
		t.Skip(err)
	}
	realNode.once.Do(func() {
		start := time.Now()
		n, image, err := startRealNode()
		realNode.mu.Lock()
		defer realNode.mu.Unlock()
		realNode.node, realNode.image, realNode.err = n, image, err
		if err == nil {
			t.Logf("real node set up in %s (images built, node started, images imported)", time.Since(start).Round(100*time.Millisecond))
		}
	})
	realNode.mu.Lock()
	defer realNode.mu.Unlock()
	if realNode.err != nil {
		t.Fatalf("starting the real node: %v", realNode.err)
	}
	return realNode.node
}

// startRealNode builds the sandbox and agent images, starts the node with
// the first and imports the second under the name the chart renders.
func startRealNode() (n *testenv.Node, image string, err error) {
	dir, err := os.MkdirTemp(env.dir, "node-")
	if err != nil {
		return nil, "", err
	}
	pauseBin := filepath.Join(dir, "pause")
	agentBin := filepath.Join(dir, "kube-state-push")
	for _, b := range []struct{ out, pkg string }{
		{pauseBin, "../internal/testenv/pause"},
		{agentBin, "../cmd/kube-state-push"},
	} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", b.out, b.pkg)
		// Static, as the Dockerfile builds it: the image has no libc.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("building %s: %w: %s", b.pkg, err, out)
		}
	}
	writeImage := func(name, bin, path string) (string, error) {
		f := filepath.Join(dir, filepath.Base(path)+".tar")
		var buf bytes.Buffer
		if err := ociimage.WriteLayoutTar(&buf, ociimage.Spec{
			Name:       name,
			Platforms:  []ociimage.Platform{{OS: "linux", Arch: "amd64", Binary: bin}},
			User:       "65532:65532",
			BinaryPath: path,
		}); err != nil {
			return "", fmt.Errorf("writing image %s: %w", name, err)
		}
		return f, os.WriteFile(f, buf.Bytes(), 0o600)
	}
	pause, err := writeImage(testenv.SandboxImage, pauseBin, "/pause")
	if err != nil {
		return nil, "", err
	}
	chartRef, err := ociimage.ChartImage(chartDir)
	if err != nil {
		return nil, "", err
	}
	image = ociimage.Normalize(chartRef)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	if n, err = testenv.StartNode(ctx, dir, pause); err != nil {
		return nil, "", err
	}
	fmt.Fprintf(os.Stderr, "e2e: the real node was Ready %s after StartNode\n", time.Since(start).Round(100*time.Millisecond))
	tar, err := writeImage(image, agentBin, "/kube-state-push")
	if err == nil {
		err = n.ImportImage(ctx, tar)
	}
	if err != nil {
		n.Stop()
		return nil, "", err
	}
	return n, image, nil
}

// stopRealNode stops the shared node, if one was started.
func stopRealNode() {
	realNode.mu.Lock()
	defer realNode.mu.Unlock()
	if realNode.node != nil {
		realNode.node.Stop()
		realNode.node = nil
	}
}

// nodeHelm runs the cached helm against the node's API server and
// returns its standard output.
func nodeHelm(t *testing.T, n *testenv.Node, args ...string) string {
	t.Helper()
	out, err := nodeHelmErr(n, args...)
	require.NoError(t, err)
	return out
}

// nodeHelmErr is nodeHelm for cleanups: an error holds helm's standard
// error.
func nodeHelmErr(n *testenv.Node, args ...string) (string, error) {
	bin, err := testenv.Binary("helm")
	if err != nil {
		return "", err
	}
	home, err := os.MkdirTemp("", "ksp-helm-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// No repositories, plugins or caches of the user's.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+n.CP.Kubeconfig,
		"HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// deleteNodeNamespace deletes ns and waits until it is gone (its Pods stopped
// by the kubelet), so that they do not run into the next test's queries.
func deleteNodeNamespace(n *testenv.Node, ns string) {
	c, err := n.Client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return
	}
	for ctx.Err() == nil {
		if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitPodReady waits until one Pod matching selector in ns is Ready, and
// returns it; on a timeout it fails with the Pods' state and the node's
// logs.
func waitPodReady(t *testing.T, c kubernetes.Interface, n *testenv.Node, ns, selector string, timeout time.Duration) corev1.Pod {
	t.Helper()
	var ready corev1.Pod
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		pods, err := c.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%d pods", len(pods.Items))
			for _, p := range pods.Items {
				last += fmt.Sprintf("; %s phase %s conditions %v statuses %v", p.Name, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
				for _, cond := range p.Status.Conditions {
					if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
						ready = p
					}
				}
			}
			if ready.Name != "" {
				return ready
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("no Ready pod %s in %s after %s: %s\nnode logs: %s", selector, ns, timeout, last, n.Logs())
	return ready
}
