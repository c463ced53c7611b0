package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/internal/testenv"
)

// outageTicks is how many snapshot intervals (1s) the receiver stays down.
const outageTicks = 5

// outageReceiver is a real receiver the outage test stops and starts again.
type outageReceiver interface {
	// WriteURL is the Remote-Write URL.
	WriteURL() string
	// Stop stops the server.
	Stop()
	// Restart starts it again on the same port with the same data.
	Restart(ctx context.Context) error
	// stored returns every sample the receiver holds, staleness markers
	// left out, and how many samples it holds twice (same series and
	// timestamp).
	stored(ctx context.Context) (sampleSet, int, error)
}

// promReceiver reads a Prometheus' samples with range-vector queries.
type promReceiver struct{ *testenv.Prometheus }

func (p promReceiver) stored(ctx context.Context) (sampleSet, int, error) {
	series, err := p.RawSamples(ctx, `{__name__=~".+"}`, 10*time.Minute)
	if err != nil {
		return nil, 0, err
	}
	set, dups := exportedSetDups(series)
	return set, dups, nil
}

// vmReceiver reads a VictoriaMetrics' samples with /api/v1/export, which
// returns every stored sample, duplicates included.
type vmReceiver struct{ *testenv.VictoriaMetrics }

func (v vmReceiver) stored(ctx context.Context) (sampleSet, int, error) {
	series, err := v.Export(ctx, `{__name__=~".+"}`)
	if err != nil {
		return nil, 0, err
	}
	set, dups := exportedSetDups(series)
	return set, dups, nil
}

// exportedSetDups is exportedSet, also counting samples stored twice.
func exportedSetDups(series []testenv.ExportedSeries) (sampleSet, int) {
	dups := 0
	for _, s := range series {
		seen := map[int64]bool{}
		for _, ts := range s.Timestamps {
			if seen[ts] {
				dups++
			}
			seen[ts] = true
		}
	}
	return exportedSet(series), dups
}

// A receiver stopped for several snapshot intervals, then started again on
// the same port and data folder, holds every sample of the outage
// afterwards: the agent keeps retrying the batches in its queue (in memory,
// or in its disk buffer) and delivers them, in order, once the receiver is
// back. Prometheus and VictoriaMetrics; the samples are counted at the
// receiver against the snapshots the agent took.
func TestReceiverOutage(t *testing.T) {
	needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "outage"
	createPods(ctx, t, client, ns, "web-1", "web-2", "web-3")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	for _, recv := range []string{"prometheus", "victoriametrics"} {
		for _, buffer := range []string{"memory", "disk"} {
			t.Run(recv+"/"+buffer, func(t *testing.T) {
				dir := t.TempDir()
				r, err := startOutageReceiver(t, ctx, recv, dir)
				require.NoError(t, err)
				t.Cleanup(r.Stop)
				bufferDir := ""
				if buffer == "disk" {
					bufferDir = filepath.Join(dir, "buffer")
				}
				runOutage(t, ctx, r, ns, recv+"-"+buffer, bufferDir)
			})
		}
	}
}

// startOutageReceiver starts a receiver of the kind named ("prometheus" or
// "victoriametrics") in dir; without VictoriaMetrics built, its tests are
// skipped (in CI they fail).
func startOutageReceiver(t *testing.T, ctx context.Context, name, dir string) (outageReceiver, error) {
	t.Helper()
	if name == "prometheus" {
		p, err := testenv.StartPrometheus(ctx, dir)
		if err != nil {
			return nil, err
		}
		return promReceiver{p}, nil
	}
	if _, err := testenv.Binary("victoria-metrics"); err != nil {
		if os.Getenv("CI") == "true" {
			return nil, err
		}
		t.Skip(err)
	}
	v, err := testenv.StartVictoriaMetrics(ctx, dir)
	if err != nil {
		return nil, err
	}
	return vmReceiver{v}, nil
}

// outageQueue is the queue of the outage tests' agents: one shard that
// holds a whole outage.
var outageQueue = queueConfig{
	Capacity: 50000, MaxShards: 1,
	BatchSendDeadline: 100 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
}

// runOutage runs an agent pushing ns to r, stops r for outageTicks
// snapshots, starts it again, and counts what r holds. With bufferDir, the
// agent's queue is a disk buffer there.
func runOutage(t *testing.T, ctx context.Context, r outageReceiver, ns, cluster, bufferDir string) {
	// The queue holds the whole outage: a few hundred samples a snapshot.
	cfg := newConfig(r.WriteURL())
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ShutdownTimeout = 30 * time.Second
	cfg.ExternalLabels = map[string]string{"cluster": cluster}
	cfg.RemoteWrite[0] = &remoteWrite{URL: r.WriteURL(), Name: "receiver", RemoteTimeout: 5 * time.Second, QueueConfig: outageQueue}
	if bufferDir != "" {
		cfg.endpoint().DiskBuffer = &diskBuffer{Directory: bufferDir, Extra: map[string]any{"max_bytes": 64 << 20}}
	}
	a := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	snapshots := func() float64 { return a.metric(t, "kube_state_push_snapshot_total", nil) }
	endpoint := map[string]string{"endpoint": "receiver"}
	sentBefore := 0.0
	eventually(t, 60*time.Second, "three snapshots delivered", func() error {
		if !a.agent.Ready() {
			return fmt.Errorf("agent not ready")
		}
		if sentBefore = a.metric(t, "kube_state_push_remote_samples_sent_total", endpoint); sentBefore == 0 || snapshots() < 3 {
			return fmt.Errorf("%g snapshots, %g samples sent", snapshots(), sentBefore)
		}
		return nil
	})

	r.Stop()
	down := time.Now()
	atStop := snapshots()
	failedAtStop := a.metric(t, "kube_state_push_remote_samples_failed_total", endpoint)
	eventually(t, 60*time.Second, fmt.Sprintf("%d snapshots while the receiver is down", outageTicks), func() error {
		if n := snapshots() - atStop; n < outageTicks {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	require.Greater(t, a.metric(t, "kube_state_push_remote_samples_failed_total", endpoint), failedAtStop, "the agent kept trying")
	if bufferDir != "" {
		n, err := dirBytes(bufferDir)
		require.NoError(t, err)
		require.Positive(t, n, "the backlog is in the disk buffer")
		t.Logf("disk buffer holds %d bytes during the outage", n)
	}
	require.NoError(t, r.Restart(ctx))
	up := time.Now()
	atRestart := snapshots()
	t.Logf("receiver down for %s, %g snapshots", up.Sub(down).Round(10*time.Millisecond), atRestart-atStop)

	eventually(t, 60*time.Second, "the backlog delivered", func() error {
		queued := a.metric(t, "kube_state_push_remote_queue_length", endpoint)
		if n := snapshots(); n < atRestart+2 || queued > 0 {
			return fmt.Errorf("%g snapshots since the restart, %g samples queued", n-atRestart, queued)
		}
		return nil
	})
	require.NoError(t, a.stop(), "the agent stops with nothing dropped")

	sent := int(a.metric(t, "kube_state_push_remote_samples_sent_total", endpoint))
	require.Zero(t, a.metric(t, "kube_state_push_remote_samples_dropped_total", endpoint), "nothing dropped")
	// VictoriaMetrics shows samples received just after a restart a moment
	// later, even after /internal/force_flush.
	var got sampleSet
	var dups int
	eventually(t, 30*time.Second, "the receiver holds every sample sent", func() error {
		var err error
		if got, dups, err = r.stored(ctx); err != nil {
			return err
		}
		if got.total() < sent {
			return fmt.Errorf("%d of %d samples", got.total(), sent)
		}
		return nil
	})
	require.Zero(t, dups, "no sample stored twice")

	// The snapshot counter has one sample per snapshot: all of them.
	ticksSet := got.filter(`__name__="kube_state_push_snapshot_total"`)
	require.Len(t, ticksSet, 1)
	var ticks []int64
	for k := range ticksSet {
		ticks = got.sorted(k)
	}
	taken := int(snapshots())
	require.Len(t, ticks, taken, "snapshots taken = snapshots stored (outage %d..%d): %v", down.UnixMilli(), up.UnixMilli(), ticks)
	during := 0
	for _, ts := range ticks {
		if ts >= down.UnixMilli() && ts < up.UnixMilli() {
			during++
		}
	}
	require.GreaterOrEqual(t, during, outageTicks, "snapshots of the outage stored")

	// Each pod's info series: a sample at every snapshot from its first.
	for _, pod := range []string{"web-1", "web-2", "web-3"} {
		infos := got.filter(`__name__="kube_pod_info"`, `pod="`+pod+`"`)
		require.Len(t, infos, 1, pod)
		for k := range infos {
			ts := got.sorted(k)
			first := 0
			for first < len(ticks) && ticks[first] < ts[0] {
				first++
			}
			require.Equal(t, ticks[first:], ts, "%s: a sample at every snapshot from its first", pod)
		}
	}
	t.Logf("snapshots taken %d, stored %d (%d during the outage); samples sent %d, stored %d",
		taken, len(ticks), during, sent, got.total())
	require.Equal(t, sent, got.total(), "samples sent = samples stored")
}

// dirBytes is the total size of the files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sizing disk buffer %s: %w", dir, err)
	}
	return n, nil
}
