package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// configMapName is the ConfigMap every kustomization generates the agent's
// configuration into, from a file named configFile.
const (
	configMapName = "kube-state-push-config"
	configFile    = "config.yaml"
)

// rendered is what a kustomization installs, as far as the tests look: its
// objects and the agent configuration it generates.
type rendered struct {
	// objects are the resources, patched; the generated ConfigMap is not
	// among them.
	objects []map[string]any
	// config is the configFile the ConfigMap is generated from.
	config []byte
}

// renderKustomization builds a kustomization in-process, for the subset of
// kustomize the manifests here use: resources (files and directories),
// namespace, a configMapGenerator of the agent's configuration (created or
// replaced), and JSON 6902 patches targeting an object by kind and name.
// Anything else fails the test, so a manifest cannot use a feature this
// rendering would silently ignore. Where kubectl is at hand,
// renderedByKubectl cross-checks it.
func renderKustomization(t *testing.T, dir string) rendered {
	t.Helper()
	var k struct {
		APIVersion         string   `json:"apiVersion"`
		Kind               string   `json:"kind"`
		Namespace          string   `json:"namespace"`
		Resources          []string `json:"resources"`
		ConfigMapGenerator []struct {
			Name     string   `json:"name"`
			Behavior string   `json:"behavior"`
			Files    []string `json:"files"`
		} `json:"configMapGenerator"`
		Patches []struct {
			Path   string `json:"path"`
			Target struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"target"`
			Options struct {
				AllowKindChange bool `json:"allowKindChange"`
			} `json:"options"`
		} `json:"patches"`
	}
	path := filepath.Join(dir, "kustomization.yaml")
	readManifest(t, path, &k, true)

	var r rendered
	for _, res := range k.Resources {
		p := filepath.Join(dir, res)
		fi, err := os.Stat(p)
		require.NoError(t, err, "%s names %s", path, res)
		if fi.IsDir() {
			base := renderKustomization(t, p)
			r.objects = append(r.objects, base.objects...)
			if base.config != nil {
				r.config = base.config
			}
			continue
		}
		var obj map[string]any
		readManifest(t, p, &obj, false)
		r.objects = append(r.objects, obj)
	}
	for _, g := range k.ConfigMapGenerator {
		require.Equal(t, configMapName, g.Name, path)
		require.Equal(t, []string{configFile}, g.Files, path)
		switch g.Behavior {
		case "", "create":
			require.Nil(t, r.config, "%s: %s already exists: behavior replace", path, g.Name)
		case "replace":
			require.NotNil(t, r.config, "%s: no %s to replace", path, g.Name)
		default:
			t.Fatalf("%s: configMapGenerator behavior %q is not rendered here", path, g.Behavior)
		}
		r.config = mustRead(t, filepath.Join(dir, configFile))
	}
	for _, p := range k.Patches {
		var ops []map[string]any
		readManifest(t, filepath.Join(dir, p.Path), &ops, false)
		n := 0
		for _, obj := range r.objects {
			if obj["kind"] != p.Target.Kind || nested(obj, "metadata", "name") != p.Target.Name {
				continue
			}
			n++
			kind := obj["kind"]
			for i, op := range ops {
				require.NoError(t, applyOp(obj, op), "%s, operation %d", p.Path, i)
			}
			require.True(t, p.Options.AllowKindChange || obj["kind"] == kind, "%s changes the kind without allowKindChange", p.Path)
		}
		require.Equal(t, 1, n, "%s: one %s %s to patch", path, p.Target.Kind, p.Target.Name)
	}
	if k.Namespace != "" {
		for _, obj := range r.objects {
			switch obj["kind"] {
			case "Namespace", "ClusterRole", "ClusterRoleBinding":
			default:
				md, _ := obj["metadata"].(map[string]any)
				md["namespace"] = k.Namespace
			}
		}
	}
	return r
}

// nested returns obj's value at the keys, or nil.
func nested(obj map[string]any, keys ...string) any {
	var v any = obj
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// applyOp applies one JSON patch operation (RFC 6902: add, remove, replace
// and test) to doc.
func applyOp(doc map[string]any, op map[string]any) error {
	path, _ := op["path"].(string)
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("path %q: not a JSON pointer", path)
	}
	keys := strings.Split(path[1:], "/")
	for i, k := range keys {
		keys[i] = strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
	}
	value, hasValue := op["value"]
	if name := op["op"]; name == "add" || name == "replace" || name == "test" {
		if !hasValue {
			return fmt.Errorf("%s %s: no value", name, path)
		}
	}
	// parent walks to the container of the last key.
	var parent any = doc
	for _, k := range keys[:len(keys)-1] {
		switch c := parent.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				return fmt.Errorf("%s: no %q", path, k)
			}
			parent = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return fmt.Errorf("%s: no index %q", path, k)
			}
			parent = c[i]
		default:
			return fmt.Errorf("%s: %q is below a scalar", path, k)
		}
	}
	last := keys[len(keys)-1]
	// set replaces the parent slice in its own parent: re-applying the
	// operation's path prefix is simpler than tracking it.
	setSlice := func(s []any) error {
		prefix := "/" + strings.Join(keys[:len(keys)-1], "/")
		return applyOp(doc, map[string]any{"op": "replace", "path": prefix, "value": s})
	}
	switch c := parent.(type) {
	case map[string]any:
		old, exists := c[last]
		switch op["op"] {
		case "add":
			c[last] = value
		case "replace", "remove", "test":
			if !exists {
				return fmt.Errorf("%s %s: nothing there", op["op"], path)
			}
			switch op["op"] {
			case "replace":
				c[last] = value
			case "remove":
				delete(c, last)
			case "test":
				if !jsonEqual(old, value) {
					return fmt.Errorf("test %s: %v, not %v", path, old, value)
				}
			}
		default:
			return fmt.Errorf("operation %v is not rendered here", op["op"])
		}
		return nil
	case []any:
		i, err := strconv.Atoi(last)
		if last == "-" && op["op"] == "add" {
			i, err = len(c), nil
		}
		if err != nil || i < 0 || i > len(c) || i == len(c) && op["op"] != "add" {
			return fmt.Errorf("%s: no index %q", path, last)
		}
		switch op["op"] {
		case "add":
			return setSlice(append(c[:i:i], append([]any{value}, c[i:]...)...))
		case "replace":
			c[i] = value
		case "remove":
			return setSlice(append(c[:i:i], c[i+1:]...))
		case "test":
			if !jsonEqual(c[i], value) {
				return fmt.Errorf("test %s: %v, not %v", path, c[i], value)
			}
		default:
			return fmt.Errorf("operation %v is not rendered here", op["op"])
		}
		return nil
	}
	return fmt.Errorf("%s: %q is below a scalar", path, last)
}

// jsonEqual compares two decoded YAML values as JSON (numbers may differ in
// type).
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// agentWorkload is the agent's Deployment or StatefulSet, as the API types.
type agentWorkload struct {
	// kind is Deployment or StatefulSet.
	kind string
	// deployment is set for a Deployment, statefulSet for a StatefulSet.
	deployment  *appsv1.Deployment
	statefulSet *appsv1.StatefulSet
}

// pod returns the workload's pod template spec.
func (w agentWorkload) pod() *corev1.PodSpec {
	if w.deployment != nil {
		return &w.deployment.Spec.Template.Spec
	}
	return &w.statefulSet.Spec.Template.Spec
}

// workload returns the kube-state-push Deployment or StatefulSet of the
// objects, decoded strictly so that a patch cannot add a misspelt field.
func (r rendered) workload(t *testing.T) agentWorkload {
	t.Helper()
	var w agentWorkload
	for _, obj := range r.objects {
		if nested(obj, "metadata", "name") != "kube-state-push" {
			continue
		}
		switch obj["kind"] {
		case "Deployment":
			w.deployment = &appsv1.Deployment{}
			decodeStrict(t, obj, w.deployment)
		case "StatefulSet":
			w.statefulSet = &appsv1.StatefulSet{}
			decodeStrict(t, obj, w.statefulSet)
		default:
			continue
		}
		require.Empty(t, w.kind, "one workload")
		w.kind = obj["kind"].(string)
	}
	require.NotEmpty(t, w.kind, "a Deployment or StatefulSet kube-state-push")
	return w
}

// claim returns the PersistentVolumeClaim of that name among the objects.
func (r rendered) claim(t *testing.T, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	for _, obj := range r.objects {
		if obj["kind"] == "PersistentVolumeClaim" && nested(obj, "metadata", "name") == name {
			var pvc corev1.PersistentVolumeClaim
			decodeStrict(t, obj, &pvc)
			return &pvc
		}
	}
	t.Fatalf("no PersistentVolumeClaim %s", name)
	return nil
}

// decodeStrict decodes a generic object into an API type, rejecting
// unknown fields.
func decodeStrict(t *testing.T, obj map[string]any, v any) {
	t.Helper()
	require.NoError(t, decodeInto(obj, v), "%s %v", obj["kind"], nested(obj, "metadata", "name"))
}

// decodeInto is decodeStrict returning the error.
func decodeInto(obj map[string]any, v any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// requireRenderedAsKubectl renders dir with kubectl kustomize, when kubectl
// is installed, and requires it to give the same objects and configuration
// as renderKustomization, but for the generated ConfigMap's name suffix.
func requireRenderedAsKubectl(t *testing.T, dir string, r rendered) {
	t.Helper()
	out, ok := renderOverlay(t, dir)
	if !ok {
		return
	}
	var got rendered
	for _, doc := range strings.Split(out, "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		if obj["kind"] == "ConfigMap" && strings.HasPrefix(nested(obj, "metadata", "name").(string), configMapName+"-") {
			got.config = []byte(nested(obj, "data", configFile).(string))
			continue
		}
		got.objects = append(got.objects, obj)
	}
	require.Equal(t, string(r.config), string(got.config), "%s: the generated configuration", dir)

	// kustomize names the generated ConfigMap by its content.
	for _, obj := range got.objects {
		vols, _ := nested(obj, "spec", "template", "spec", "volumes").([]any)
		for _, v := range vols {
			if cm, ok := nested(v.(map[string]any), "configMap").(map[string]any); ok {
				require.Regexp(t, "^"+configMapName+"-[a-z0-9]+$", cm["name"])
				cm["name"] = configMapName
			}
		}
	}
	key := func(obj map[string]any) string {
		return fmt.Sprint(obj["kind"], "/", nested(obj, "metadata", "namespace"), "/", nested(obj, "metadata", "name"))
	}
	want := map[string]map[string]any{}
	for _, obj := range r.objects {
		want[key(obj)] = obj
	}
	require.Len(t, got.objects, len(want), dir)
	for _, obj := range got.objects {
		w, ok := want[key(obj)]
		require.True(t, ok, "%s: kubectl renders %s", dir, key(obj))
		if !reflect.DeepEqual(normalize(t, w), normalize(t, obj)) {
			require.Equal(t, toYAML(t, w), toYAML(t, obj), "%s: %s", dir, key(obj))
		}
	}
}

// normalize round-trips a value through JSON, so that numbers compare.
func normalize(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
