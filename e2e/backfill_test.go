package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/faultproxy"
	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// backfillOutage is how many snapshots (1 s apart) VictoriaMetrics is down
// for in TestBackfillNewestFirst.
const backfillOutage = 15

// backfill: newest_first against VictoriaMetrics, which takes samples in
// any order, with a disk buffer. A proxy in front answers 503 for
// backfillOutage snapshots, then forwards again: the newest snapshot goes
// ahead of the outage's backlog (by the proxy's record of what it
// forwarded, in order) and is stored within about an interval of the
// recovery; in the end every snapshot taken is stored at VictoriaMetrics,
// once.
func TestBackfillNewestFirst(t *testing.T) {
	needEnv(t)
	needBinary(t, "victoria-metrics")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "backfill"
	createPods(ctx, t, client, ns, "web-1", "web-2")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })
	dir := t.TempDir()
	vm, err := testenv.StartVictoriaMetrics(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(vm.Stop)
	proxy := startProxy(t, vm.WriteURL())

	cfg := newConfig(proxy.URL()).noSelfMetrics()
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ExternalLabels = map[string]string{"cluster": "backfill"}
	cfg.RemoteWrite[0] = &remoteWrite{URL: proxy.URL(), Name: "vm", Backfill: "newest_first",
		MetadataConfig: &metadataConfig{Send: false}, DiskBuffer: &diskBuffer{Directory: filepath.Join(dir, "buffer")}}
	a := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	snapshots := func() float64 { return a.metric(t, "kube_state_push_snapshot_total", nil) }
	endpoint := map[string]string{"endpoint": "vm"}
	a.waitDelivered(t, endpoint, 3)

	proxy.SetRules(faultproxy.Always(faultproxy.Respond(http.StatusServiceUnavailable)))
	atStop := snapshots()
	eventually(t, 2*backfillOutage*time.Second, "snapshots while the receiver is down", func() error {
		if n := snapshots() - atStop; n < backfillOutage {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	outageRecords := len(proxy.Records())
	proxy.SetRules() // forward everything again
	newestAtUp := int64(a.metric(t, "kube_state_push_snapshot_last_timestamp_seconds", nil) * 1000)

	eventually(t, 60*time.Second, "the backlog delivered", func() error {
		if q := a.metric(t, "kube_state_push_remote_queue_length", endpoint); q > 0 || snapshots() < atStop+backfillOutage+3 {
			return fmt.Errorf("%g samples queued", q)
		}
		return nil
	})
	require.NoError(t, a.stop())
	a.requireNothingDropped(t, "vm")

	// The order in which the snapshots' samples reached VictoriaMetrics
	// after the recovery: the first time each timestamp was forwarded.
	var order []int64
	firstAt := map[int64]time.Duration{}
	recovered := time.Duration(-1) // when the proxy forwarded again
	for _, rec := range proxy.Records()[outageRecords:] {
		if rec.Outcome != faultproxy.Forwarded || rec.Write == nil {
			continue
		}
		if recovered < 0 {
			recovered = rec.At
		}
		for _, ts := range rec.Write.Timeseries {
			for _, s := range ts.Samples {
				if _, ok := firstAt[s.Timestamp]; !ok {
					firstAt[s.Timestamp] = rec.At
					order = append(order, s.Timestamp)
				}
			}
		}
	}
	i := slices.IndexFunc(order, func(ts int64) bool { return ts >= newestAtUp })
	require.GreaterOrEqual(t, i, 0, "the newest snapshot at recovery was forwarded")
	var behind int
	for _, ts := range order[i+1:] {
		if ts < newestAtUp {
			behind++
		}
	}
	require.Positive(t, behind, "older snapshots of the backlog follow the newest: %v", order)
	current := firstAt[order[i]] - recovered
	require.LessOrEqual(t, current, 2*time.Second, "the newest snapshot within about an interval (1s) of the recovery")
	require.True(t, slices.IsSorted(slices.DeleteFunc(slices.Clone(order[i+1:]), func(ts int64) bool { return ts >= newestAtUp })),
		"the backlog behind it in order: %v", order)

	taken := int(snapshots())
	var got sampleSet
	var dups int
	eventually(t, 30*time.Second, "every snapshot stored", func() error {
		if err := vm.ForceFlush(ctx); err != nil {
			return err
		}
		series, err := vm.Export(ctx, `{cluster="backfill"}`)
		if err != nil {
			return err
		}
		got, dups = exportedSetDups(series)
		infos := got.filter(`__name__="kube_pod_info"`, `pod="web-1"`)
		for k := range infos {
			if n := len(infos[k]); n < taken-1 {
				return fmt.Errorf("%d of %d snapshots", n, taken)
			}
		}
		return nil
	})
	require.Zero(t, dups, "no sample stored twice")
	sent := int(a.metric(t, "kube_state_push_remote_samples_sent_total", endpoint))
	require.Equal(t, sent, got.total(), "samples sent = samples stored")
	t.Logf("after %d snapshots down: the newest snapshot forwarded %s after the first request of the recovery, as number %d of %d timestamps, %d older ones of the backlog behind it; in the end %d snapshots taken, %d samples sent = stored, none twice",
		backfillOutage, current.Round(time.Millisecond), i+1, len(order), behind, taken, sent)
}
