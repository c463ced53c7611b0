package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// The cluster dashboard's queries, answered alike by two receivers that
// one agent pushes the same snapshots to.

// dashboardExprs returns the PromQL of every panel of the cluster
// dashboard, with its variables set: cluster, node and namespace are
// regular expressions, as Grafana passes them.
func dashboardExprs(t *testing.T, vars map[string]string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "monitoring", "cluster-dashboard.json"))
	require.NoError(t, err)
	type panel struct {
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var exprs []string
	var walk func(raw []json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			require.NoError(t, json.Unmarshal(r, &p))
			for _, tg := range p.Targets {
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	walk(d.Panels)
	// Longest names first, so that $namespace is not read as $name.
	names := mapKeysOf(vars)
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for i, e := range exprs {
		for _, n := range names {
			e = strings.ReplaceAll(e, "$"+n, vars[n])
		}
		require.NotContains(t, e, "$", "a dashboard variable left in %s", exprs[i])
		exprs[i] = e
	}
	return exprs
}

// vectorKey is an instant query's result as sorted "labels value" lines,
// for comparing the answers of two receivers.
func vectorKey(res []testenv.Sample) []string {
	out := make([]string, 0, len(res))
	for _, s := range res {
		v := fmt.Sprintf("%.6g", s.Value)
		if math.IsNaN(s.Value) {
			v = "NaN"
		}
		out = append(out, labelKey(s.Metric)+" "+v)
	}
	sort.Strings(out)
	return out
}

// TestMimirDashboardQueries has one agent push the sample cluster (pods in
// every state a dashboard shows, two nodes) to Prometheus as 1.0 and to
// Mimir as 2.0, and runs every query of the cluster dashboard against both
// at the same evaluation time: the answers are equal.
func TestMimirDashboardQueries(t *testing.T) {
	needEnv(t)
	m := startMimir(t, testenv.MimirOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns, cluster, tenant = "mimir-dashboard", "mimir-dashboard", "dashboard"
	sc, err := testenv.CreateSampleCluster(ctx, client, ns, "mimirdash")
	require.NoError(t, err)
	t.Cleanup(func() {
		cleanupNodes(t, client, sc.Nodes)
		deleteNamespace(t, client, ns)
	})

	cfg := newConfig("").noSelfMetrics()
	cfg.Namespaces = []string{ns}
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.ExternalLabels = map[string]string{"cluster": cluster}
	cfg.RemoteWrite = []*remoteWrite{
		matrixEndpoint("prom", env.prom.WriteURL(), protoV1, nil),
		matrixEndpoint("mimir", m.WriteURL(), protoV2, mimirTenant(tenant)),
	}
	a := startAgent(t, agentOptions{config: cfg})
	exprs := dashboardExprs(t, map[string]string{
		"cluster": cluster, "node": "mimirdash-.*", "namespace": ns,
		"__rate_interval": "1m", "__range": "5m",
	})

	var answered int
	eventually(t, 60*time.Second, "the dashboard's queries answered alike", func() error {
		// A few seconds back, so that both receivers hold every sample up
		// to then.
		at := time.Now().Add(-3 * time.Second)
		answered = 0
		for _, q := range exprs {
			p, err := env.prom.QueryAt(ctx, q, at)
			if err != nil {
				return err
			}
			mi, err := m.QueryAt(ctx, tenant, q, at)
			if err != nil {
				return err
			}
			if want, got := vectorKey(p), vectorKey(mi); !slices.Equal(want, got) {
				return fmt.Errorf("%s:\nPrometheus %v\nMimir      %v", q, want, got)
			}
			if len(p) > 0 {
				answered++
			}
		}
		// The sample cluster has pods, containers, nodes and a namespace,
		// not every kind the dashboard shows (no jobs, volumes...).
		if answered < 30 {
			return fmt.Errorf("only %d of %d queries have an answer yet", answered, len(exprs))
		}
		return nil
	})
	t.Logf("%d dashboard queries, %d with a non-empty answer, equal at Prometheus and Mimir", len(exprs), answered)
	require.NoError(t, a.stop())
	a.requireNothingDropped(t, "prom")
	a.requireNothingDropped(t, "mimir")
}
