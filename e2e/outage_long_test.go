package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// longOutageTicks is how many snapshots (1 s apart) the receiver is down
// for in TestLongReceiverOutage: ten minutes.
const longOutageTicks = 600

// A receiver down for ten minutes at a 1 s snapshot interval (600 snapshots),
// Prometheus and VictoriaMetrics, with the memory queue and with a disk
// buffer, every other setting the default: every sample the agent counts as
// sent is stored once. With a disk buffer every snapshot taken is stored;
// in memory the feed keeps the newest five minutes of snapshots and drops
// older ones whole, counted as queue_full and nothing else. The four run at
// once, each with a receiver of its own.
func TestLongReceiverOutage(t *testing.T) {
	needEnv(t)
	if testing.Short() {
		t.Skip("ten minutes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	client, err := env.cp.Client()
	require.NoError(t, err)
	const ns = "long-outage"
	createPods(ctx, t, client, ns, "web-1", "web-2", "web-3")
	t.Cleanup(func() { deleteNamespace(t, client, ns) })

	t.Run("all", func(t *testing.T) {
		for _, recv := range []string{"prometheus", "victoriametrics"} {
			for _, buffer := range []string{"memory", "disk"} {
				t.Run(recv+"/"+buffer, func(t *testing.T) {
					t.Parallel()
					dir := t.TempDir()
					r, err := startOutageReceiver(t, ctx, recv, dir)
					require.NoError(t, err)
					if p, ok := r.(promReceiver); ok {
						r = longPromReceiver{p}
					}
					t.Cleanup(r.Stop)
					bufferDir := ""
					if buffer == "disk" {
						bufferDir = filepath.Join(dir, "buffer")
					}
					runLongOutage(t, ctx, r, ns, "long-"+recv+"-"+buffer, bufferDir)
				})
			}
		}
	})
}

// longPromReceiver reads back the whole run, not only its last ten minutes.
type longPromReceiver struct{ promReceiver }

func (p longPromReceiver) stored(ctx context.Context) (sampleSet, int, error) {
	series, err := p.RawSamples(ctx, `{__name__=~".+"}`, 30*time.Minute)
	if err != nil {
		return nil, 0, err
	}
	set, dups := exportedSetDups(series)
	return set, dups, nil
}

// runLongOutage runs an agent in the default configuration (but for the
// 1 s interval) pushing ns to r, stops r for longOutageTicks snapshots,
// starts it again, and checks what r holds. With bufferDir, the endpoint
// has a disk buffer there (default size).
func runLongOutage(t *testing.T, ctx context.Context, r outageReceiver, ns, cluster, bufferDir string) {
	cfg := newConfig(r.WriteURL())
	cfg.Resources, cfg.Namespaces = []string{"pods"}, []string{ns}
	cfg.ExternalLabels = map[string]string{"cluster": cluster}
	cfg.RemoteWrite[0] = &remoteWrite{URL: r.WriteURL(), Name: "receiver"}
	if bufferDir != "" {
		cfg.endpoint().DiskBuffer = &diskBuffer{Directory: bufferDir}
	}
	a := startAgent(t, agentOptions{ctx: ctx, config: cfg})
	snapshots := func() float64 { return a.metric(t, "kube_state_push_snapshot_total", nil) }
	endpoint := map[string]string{"endpoint": "receiver"}
	a.waitDelivered(t, endpoint, 3)

	r.Stop()
	down := time.Now()
	atStop := snapshots()
	eventually(t, 2*longOutageTicks*time.Second, fmt.Sprintf("%d snapshots while the receiver is down", longOutageTicks), func() error {
		if n := snapshots() - atStop; n < longOutageTicks {
			return fmt.Errorf("%g snapshots", n)
		}
		return nil
	})
	var bufBytes int64
	if bufferDir != "" {
		var err error
		bufBytes, err = dirBytes(bufferDir)
		require.NoError(t, err)
		require.Positive(t, bufBytes, "the backlog is in the disk buffer")
	}
	require.NoError(t, r.Restart(ctx))
	up := time.Now()
	atRestart := snapshots()

	eventually(t, 5*time.Minute, "the backlog delivered", func() error {
		queued := a.metric(t, "kube_state_push_remote_queue_length", endpoint)
		if n := snapshots(); n < atRestart+3 || queued > 0 {
			return fmt.Errorf("%g snapshots since the restart, %g samples queued", n-atRestart, queued)
		}
		return nil
	})
	drain := time.Since(up)
	require.NoError(t, a.stop(), "the agent stops with nothing dropped at stop")

	dropped := func(reason string) float64 {
		return a.metric(t, "kube_state_push_remote_samples_dropped_total", map[string]string{"endpoint": "receiver", "reason": reason})
	}
	queueFull := dropped("queue_full")
	require.Equal(t, queueFull, a.metric(t, "kube_state_push_remote_samples_dropped_total", endpoint),
		"nothing dropped but whole snapshots the memory queue had no room for")
	sent := int(a.metric(t, "kube_state_push_remote_samples_sent_total", endpoint))
	var got sampleSet
	var dups int
	eventually(t, 60*time.Second, "the receiver holds every sample sent", func() error {
		var err error
		if got, dups, err = r.stored(ctx); err != nil {
			return err
		}
		if got = got.filter(`cluster="` + cluster + `"`); got.total() < sent {
			return fmt.Errorf("%d of %d samples", got.total(), sent)
		}
		return nil
	})
	require.Zero(t, dups, "no sample stored twice")
	require.Equal(t, sent, got.total(), "samples sent = samples stored")

	ticksSet := got.filter(`__name__="kube_state_push_snapshot_total"`)
	require.Len(t, ticksSet, 1)
	var ticks []int64
	for k := range ticksSet {
		ticks = got.sorted(k)
	}
	taken := int(snapshots())
	during := 0
	for _, ts := range ticks {
		if ts >= down.UnixMilli() && ts < up.UnixMilli() {
			during++
		}
	}
	if bufferDir != "" {
		require.Zero(t, queueFull, "a disk buffer takes every snapshot")
		require.Len(t, ticks, taken, "every snapshot taken is stored")
	} else {
		require.Positive(t, queueFull, "ten minutes do not fit in the memory queue's five")
		// The newest five minutes of the outage (300 snapshots) are kept,
		// and one or two more are in the queue itself.
		require.GreaterOrEqual(t, during, 300, "the newest snapshots of the outage are kept")
		require.Less(t, during, longOutageTicks-100, "older snapshots of the outage were dropped")
	}
	for _, pod := range []string{"web-1", "web-2", "web-3"} {
		infos := got.filter(`__name__="kube_pod_info"`, `pod="`+pod+`"`)
		require.Len(t, infos, 1, pod)
		for k := range infos {
			require.Equal(t, ticks[len(ticks)-len(got[k]):], got.sorted(k), "%s: a sample in every snapshot stored", pod)
		}
	}
	t.Logf("%s: down %s; snapshots taken %d, stored %d (%d of %d during the outage); samples sent %d = stored %d; dropped as queue_full %g; disk buffer %d bytes at the end of the outage; backlog delivered %s after the receiver came back",
		cluster, up.Sub(down).Round(time.Second), taken, len(ticks), during, int(atRestart-atStop), sent, got.total(), queueFull, bufBytes, drain.Round(time.Second))
}
