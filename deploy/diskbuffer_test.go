package deploy_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/queue"
)

// kustomizations returns every directory of deploy/ holding a
// kustomization.yaml.
func kustomizations(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("*/kustomization.yaml")
	require.NoError(t, err)
	var dirs []string
	for _, p := range paths {
		dirs = append(dirs, filepath.Dir(p))
	}
	return dirs
}

// loadRendered loads the agent configuration a kustomization generates,
// with the downward API env the overlays expect.
func loadRendered(t *testing.T, dir string, r rendered) *config.Config {
	t.Helper()
	t.Setenv("POD_NAME", "kube-state-push-0")
	t.Setenv("POD_NAMESPACE", "kube-state-push")
	cfg, err := config.Load(r.config, filepath.Join(dir, configFile))
	require.NoError(t, err, dir)
	return cfg
}

// Every kustomization runs every endpoint with a disk buffer of its own on
// a writable volume big enough for it (diskBufferProblems), and renders as
// kubectl does.
func TestDiskBuffer(t *testing.T) {
	dirs := kustomizations(t)
	for _, d := range []string{"base", "ha", "ha-replicas", "persistent", "sharded"} {
		require.Contains(t, dirs, d)
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			r := renderKustomization(t, dir)
			requireRenderedAsKubectl(t, dir, r)
			cfg := loadRendered(t, dir, r)
			require.Empty(t, diskBufferProblems(cfg.RemoteWrite, r.workload(t), r))
		})
	}
}

// The persistent overlay keeps the base's configuration and puts the
// buffer on a ReadWriteOnce claim, so the one replica is replaced with
// Recreate.
func TestPersistentOverlay(t *testing.T) {
	files, k := kustomizationFiles(t, "persistent")
	require.Equal(t, []string{"../base", "pvc.yaml"}, k.Resources)
	require.Empty(t, k.ConfigMapGenerator, "the base's configuration")
	require.Contains(t, files, "deployment.yaml")

	r := renderKustomization(t, "persistent")
	require.Equal(t, string(mustRead(t, "base/config.yaml")), string(r.config))
	w := r.workload(t)
	require.Equal(t, "Deployment", w.kind)
	require.Equal(t, ptr.To[int32](1), w.deployment.Spec.Replicas)
	require.Equal(t, "Recreate", string(w.deployment.Spec.Strategy.Type))
	v := bufferVolume(t, w)
	require.NotNil(t, v.PersistentVolumeClaim, "the buffer volume is a claim")
	require.Nil(t, v.EmptyDir)
	pvc := r.claim(t, v.PersistentVolumeClaim.ClaimName)
	require.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, pvc.Spec.AccessModes)
	_, ok := w.pod().Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage]
	require.False(t, ok, "nothing of the buffer on ephemeral storage")
}

// The base and the Deployment overlays keep the buffer on an emptyDir; the
// sharded StatefulSet gives each shard a claim of its own.
func TestBufferVolumes(t *testing.T) {
	for _, dir := range []string{"base", "ha", "ha-replicas"} {
		w := renderKustomization(t, dir).workload(t)
		require.NotNil(t, bufferVolume(t, w).EmptyDir, dir)
	}
	w := renderKustomization(t, "sharded").workload(t)
	require.Equal(t, "StatefulSet", w.kind)
	for _, v := range w.pod().Volumes {
		require.NotEqual(t, "buffer", v.Name, "the claim template replaces the emptyDir")
	}
	require.Len(t, w.statefulSet.Spec.VolumeClaimTemplates, 1)
	require.Equal(t, "buffer", w.statefulSet.Spec.VolumeClaimTemplates[0].Name)
}

// bufferVolume returns the pod volume named buffer.
func bufferVolume(t *testing.T, w agentWorkload) corev1.Volume {
	t.Helper()
	i := slices.IndexFunc(w.pod().Volumes, func(v corev1.Volume) bool { return v.Name == "buffer" })
	require.GreaterOrEqual(t, i, 0, "a volume named buffer")
	return w.pod().Volumes[i]
}

// The checks of TestDiskBuffer catch each way a manifest can get the disk
// buffer wrong.
func TestDiskBufferProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dir    string
		mutate func(eps *[]queue.Config, w agentWorkload, r *rendered)
		want   string
	}{{
		name: "no disk_buffer",
		dir:  "base",
		mutate: func(eps *[]queue.Config, _ agentWorkload, _ *rendered) {
			(*eps)[0].DiskBuffer = queue.DefaultDiskBufferConfig
		},
		want: "remote_write prometheus: no disk_buffer.directory",
	}, {
		name: "a directory shared",
		dir:  "ha-replicas",
		mutate: func(eps *[]queue.Config, _ agentWorkload, _ *rendered) {
			other := (*eps)[0]
			other.Name = "other"
			*eps = append(*eps, other)
		},
		want: "remote_write other: disk_buffer.directory /var/lib/kube-state-push/mimir is mimir's too",
	}, {
		name: "a directory inside another's",
		dir:  "base",
		mutate: func(eps *[]queue.Config, _ agentWorkload, _ *rendered) {
			other := (*eps)[0]
			other.Name = "other"
			other.DiskBuffer.Directory += "/other"
			*eps = append(*eps, other)
		},
		want: "remote_write other: disk_buffer.directory /var/lib/kube-state-push/prometheus/other is inside prometheus's",
	}, {
		name: "a relative directory",
		dir:  "base",
		mutate: func(eps *[]queue.Config, _ agentWorkload, _ *rendered) {
			(*eps)[0].DiskBuffer.Directory = "buffer/prometheus"
		},
		want: "remote_write prometheus: disk_buffer.directory buffer/prometheus is not an absolute clean path",
	}, {
		name: "on the read-only root filesystem",
		dir:  "base",
		mutate: func(eps *[]queue.Config, _ agentWorkload, _ *rendered) {
			(*eps)[0].DiskBuffer.Directory = "/var/lib/kube-state-pusher/prometheus"
		},
		want: "remote_write prometheus: disk_buffer.directory /var/lib/kube-state-pusher/prometheus is on no volume mount",
	}, {
		name: "mounted read-only",
		dir:  "sharded",
		mutate: func(_ *[]queue.Config, w agentWorkload, _ *rendered) {
			w.pod().Containers[0].VolumeMounts[1].ReadOnly = true
		},
		want: "remote_write prometheus: volume buffer is mounted read-only",
	}, {
		name: "no fsGroup",
		dir:  "ha",
		mutate: func(_ *[]queue.Config, w agentWorkload, _ *rendered) {
			w.pod().SecurityContext.FSGroup = nil
		},
		want: "volume buffer: no fsGroup makes it writable to the agent (user 65532, group 65532)",
	}, {
		name: "another fsGroup",
		dir:  "persistent",
		mutate: func(_ *[]queue.Config, w agentWorkload, _ *rendered) {
			w.pod().SecurityContext.FSGroup = ptr.To[int64](1000)
		},
		want: "volume buffer: no fsGroup makes it writable to the agent (user 65532, group 65532)",
	}, {
		name: "an emptyDir smaller than max_bytes",
		dir:  "base",
		mutate: func(_ *[]queue.Config, w agentWorkload, _ *rendered) {
			w.pod().Volumes[1].EmptyDir.SizeLimit = ptr.To(resource.MustParse("1Gi"))
		},
		want: "volume buffer: emptyDir sizeLimit 1Gi is not above the max_bytes of its endpoints (1073741824)",
	}, {
		name: "an emptyDir without its ephemeral-storage request",
		dir:  "base",
		mutate: func(_ *[]queue.Config, w agentWorkload, _ *rendered) {
			delete(w.pod().Containers[0].Resources.Requests, corev1.ResourceEphemeralStorage)
		},
		want: "volume buffer: the container requests ephemeral-storage 0, less than the emptyDir's sizeLimit 1280Mi",
	}, {
		name: "a claim smaller than max_bytes",
		dir:  "sharded",
		mutate: func(_ *[]queue.Config, w agentWorkload, _ *rendered) {
			w.statefulSet.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("512Mi")
		},
		want: "volume buffer: claim template buffer requests storage 512Mi, not above the max_bytes of its endpoints (1073741824)",
	}, {
		name: "a claim that is not there",
		dir:  "persistent",
		mutate: func(_ *[]queue.Config, w agentWorkload, _ *rendered) {
			w.pod().Volumes[1].PersistentVolumeClaim.ClaimName = "other"
		},
		want: "volume buffer: no PersistentVolumeClaim other",
	}, {
		name: "another kind of volume",
		dir:  "base",
		mutate: func(_ *[]queue.Config, w agentWorkload, _ *rendered) {
			w.pod().Volumes[1].VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kube-state-push"}}
		},
		want: "volume buffer: neither an emptyDir nor a PersistentVolumeClaim",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := renderKustomization(t, tc.dir)
			cfg := loadRendered(t, tc.dir, r)
			w := r.workload(t)
			require.Empty(t, diskBufferProblems(cfg.RemoteWrite, w, r), "as shipped")
			tc.mutate(&cfg.RemoteWrite, w, &r)
			require.Contains(t, diskBufferProblems(cfg.RemoteWrite, w, r), tc.want)
		})
	}
}

// diskBufferProblems returns what is wrong with the endpoints' disk buffers
// in the workload: an endpoint without one, a directory shared with or
// inside another endpoint's, a directory on no writable volume mount of the
// agent's container, a volume the agent's user cannot write (no matching
// fsGroup), and a volume that is neither an emptyDir with a sizeLimit
// above the max_bytes of the endpoints on it (and that much
// ephemeral-storage requested) nor a claim requesting that much.
func diskBufferProblems(eps []queue.Config, w agentWorkload, r rendered) []string {
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(eps) == 0 {
		return []string{"no remote_write"}
	}
	pod := w.pod()
	c := &pod.Containers[0]
	owner := map[string]string{} // directory -> endpoint
	maxBytes := map[string]int64{}
	for _, ep := range eps {
		dir := ep.DiskBuffer.Directory
		if dir == "" {
			problem("remote_write %s: no disk_buffer.directory", ep.Name)
			continue
		}
		if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
			problem("remote_write %s: disk_buffer.directory %s is not an absolute clean path", ep.Name, dir)
			continue
		}
		for other, name := range owner {
			switch {
			case other == dir:
				problem("remote_write %s: disk_buffer.directory %s is %s's too", ep.Name, dir, name)
			case within(dir, other):
				problem("remote_write %s: disk_buffer.directory %s is inside %s's", ep.Name, dir, name)
			case within(other, dir):
				problem("remote_write %s: disk_buffer.directory %s holds %s's", ep.Name, dir, name)
			}
		}
		owner[dir] = ep.Name
		var m *corev1.VolumeMount
		for i := range c.VolumeMounts {
			vm := &c.VolumeMounts[i]
			if within(dir, vm.MountPath) && (m == nil || len(vm.MountPath) > len(m.MountPath)) {
				m = vm
			}
		}
		if m == nil {
			problem("remote_write %s: disk_buffer.directory %s is on no volume mount", ep.Name, dir)
			continue
		}
		if m.ReadOnly {
			problem("remote_write %s: volume %s is mounted read-only", ep.Name, m.Name)
		}
		maxBytes[m.Name] += ep.DiskBuffer.MaxBytes
	}

	user, group := pod.SecurityContext.RunAsUser, pod.SecurityContext.RunAsGroup
	if sc := c.SecurityContext; sc != nil {
		user = cmpOr(sc.RunAsUser, user)
		group = cmpOr(sc.RunAsGroup, group)
	}
	for _, name := range slices.Sorted(maps.Keys(maxBytes)) {
		need := maxBytes[name]
		if fs := pod.SecurityContext.FSGroup; user == nil || fs == nil || *fs != ptr.Deref(group, -1) && *fs != *user {
			problem("volume %s: no fsGroup makes it writable to the agent (user %s, group %s)", name, fmtID(user), fmtID(group))
		}
		var claim *corev1.PersistentVolumeClaim
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == name })
		switch {
		case i >= 0 && pod.Volumes[i].EmptyDir != nil:
			size := pod.Volumes[i].EmptyDir.SizeLimit
			if size == nil || size.Value() <= need {
				problem("volume %s: emptyDir sizeLimit %s is not above the max_bytes of its endpoints (%d)", name, fmtQuantity(size), need)
				continue
			}
			if req := c.Resources.Requests[corev1.ResourceEphemeralStorage]; req.Cmp(*size) < 0 {
				problem("volume %s: the container requests ephemeral-storage %s, less than the emptyDir's sizeLimit %s", name, req.String(), size.String())
			}
			continue
		case i >= 0 && pod.Volumes[i].PersistentVolumeClaim != nil:
			claimName := pod.Volumes[i].PersistentVolumeClaim.ClaimName
			j := slices.IndexFunc(r.objects, func(obj map[string]any) bool {
				return obj["kind"] == "PersistentVolumeClaim" && nested(obj, "metadata", "name") == claimName
			})
			if j < 0 {
				problem("volume %s: no PersistentVolumeClaim %s", name, claimName)
				continue
			}
			var pvc corev1.PersistentVolumeClaim
			if err := decodeInto(r.objects[j], &pvc); err != nil {
				problem("volume %s: PersistentVolumeClaim %s: %v", name, claimName, err)
				continue
			}
			claim = &pvc
		case i < 0 && w.statefulSet != nil:
			j := slices.IndexFunc(w.statefulSet.Spec.VolumeClaimTemplates, func(c corev1.PersistentVolumeClaim) bool { return c.Name == name })
			if j < 0 {
				problem("volume %s: not in the pod nor a claim template", name)
				continue
			}
			claim = &w.statefulSet.Spec.VolumeClaimTemplates[j]
		case i < 0:
			problem("volume %s: not in the pod", name)
			continue
		default:
			problem("volume %s: neither an emptyDir nor a PersistentVolumeClaim", name)
			continue
		}
		what := "PersistentVolumeClaim " + claim.Name
		if i < 0 {
			what = "claim template " + claim.Name
		}
		if req := claim.Spec.Resources.Requests[corev1.ResourceStorage]; req.Value() <= need {
			problem("volume %s: %s requests storage %s, not above the max_bytes of its endpoints (%d)", name, what, req.String(), need)
		}
		if !slices.Equal(claim.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
			problem("volume %s: %s has access modes %v, not ReadWriteOnce (one pod's buffer)", name, what, claim.Spec.AccessModes)
		}
	}
	return problems
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// cmpOr returns a unless it is nil, else b.
func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func fmtID(id *int64) string {
	if id == nil {
		return "unset"
	}
	return fmt.Sprint(*id)
}

func fmtQuantity(q *resource.Quantity) string {
	if q == nil {
		return "unset"
	}
	return q.String()
}
