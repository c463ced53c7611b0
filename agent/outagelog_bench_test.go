package agent

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue/diskbuffer"
)

// outageDay runs BenchmarkOutageLog for 24 simulated hours (2,880 ticks)
// instead of one; without it the day is extrapolated from the hour.
var outageDay = flag.Bool("outagelog.day", false, "BenchmarkOutageLog: simulate 24 hours instead of extrapolating from one")

// outageCluster is the benchmark's cluster: 10k pods and 1k nodes whose
// pods change at 10 updates a second of simulated time.
type outageCluster struct {
	pods, nodes *seriesMap
	// live are the current pods, by slot.
	live []*v1.Pod
	// next numbers the pods that replace others.
	next int
	// tick counts the ticks, for the change mix.
	tick int
}

func newOutageCluster(tb testing.TB) *outageCluster {
	tb.Helper()
	m := newMetrics(prometheus.NewRegistry())
	c := &outageCluster{}
	c.pods = benchMap(tb, m, "pods", 10_000, func(i int) any {
		p := benchPod(i)
		c.live = append(c.live, p)
		return p
	})
	c.nodes = benchMap(tb, m, "nodes", 1_000, func(i int) any { return benchNode(i) })
	c.next = len(c.live)
	return c
}

// update applies one tick's 300 pod updates (10 a second for 30 s): half
// container restarts (restart count +1 and a last terminated state),
// a third readiness flips, a sixth pods replaced by new pods (new name
// and UID).
func (c *outageCluster) update(tb testing.TB, at time.Time) {
	c.tick++
	for u := range 300 {
		slot := (c.tick*7919 + u*104729) % len(c.live)
		p := c.live[slot].DeepCopy()
		switch {
		case u%6 < 3:
			cs := &p.Status.ContainerStatuses[0]
			cs.RestartCount++
			cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 137, Reason: "OOMKilled",
				StartedAt: metav1.NewTime(at.Add(-time.Hour)), FinishedAt: metav1.NewTime(at),
			}}
			cs.State.Running.StartedAt = metav1.NewTime(at)
			require.NoError(tb, c.pods.Update(p))
		case u%6 < 5:
			ready := !p.Status.ContainerStatuses[0].Ready
			st := v1.ConditionFalse
			if ready {
				st = v1.ConditionTrue
			}
			p.Status.ContainerStatuses[0].Ready = ready
			for i := range p.Status.Conditions {
				if t := p.Status.Conditions[i].Type; t == v1.PodReady || t == v1.ContainersReady {
					p.Status.Conditions[i].Status = st
					p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(at)
				}
			}
			require.NoError(tb, c.pods.Update(p))
		default:
			require.NoError(tb, c.pods.Delete(c.live[slot]))
			p = benchPod(c.next)
			c.next++
			require.NoError(tb, c.pods.Add(p))
		}
		c.live[slot] = p
	}
}

// frame builds the tick's frame from the series maps as the snapshot
// loop does (seriesMap.snapshot): every object's set keyed by its UID's
// hash, and the series that ended since the last frame.
func (c *outageCluster) frame(ts int64) *encode.Frame {
	f := &encode.Frame{Timestamp: ts}
	c.pods.snapshot(f, false)
	c.nodes.snapshot(f, false)
	return f
}

// frameEncoder expands a frame into samples and encodes them as the send
// path does: Remote-Write 1.0 requests of benchBatch samples, snappy
// compressed.
type frameEncoder struct {
	enc   encode.V1Encoder
	batch []encode.Sample
	out   []byte
	// bytes counts the compressed bytes.
	bytes int
}

func (e *frameEncoder) encode(f *encode.Frame) int {
	n := 0
	for _, o := range f.Objects {
		s := o.Set
		for i := range s.Refs {
			e.add(encode.Sample{Labels: s.Labels(i), Value: s.Refs[i].Value, Timestamp: f.Timestamp})
		}
		n += len(s.Refs)
	}
	for _, st := range f.Stale {
		e.add(encode.Sample{Labels: st.Labels, Value: encode.StaleNaN, Timestamp: f.Timestamp})
	}
	e.flush()
	return n + len(f.Stale)
}

func (e *frameEncoder) add(s encode.Sample) {
	e.batch = append(e.batch, s)
	if len(e.batch) == benchBatch {
		e.flush()
	}
}

func (e *frameEncoder) flush() {
	if len(e.batch) == 0 {
		return
	}
	e.out = e.enc.Encode(e.out[:0], e.batch)
	e.bytes += len(e.out)
	clear(e.batch)
	e.batch = e.batch[:0]
}

// BenchmarkOutageLog is a receiver outage at 10k pods / 1k nodes: one
// snapshot every 30 s, 10 pod updates a second, every frame appended to a
// disk buffer (fsync per frame). It reports the bytes on disk for an hour
// and for a day (simulated with -outagelog.day, else extrapolated from
// the hour: each segment is a keyframe plus about as many bytes of
// deltas), and the cost of replaying the hour's frames (Next, expanding
// every sample, encoding as Remote-Write 1.0 with snappy, Ack) against
// encoding the same frames from memory as the live path does.
func BenchmarkOutageLog(b *testing.B) {
	ticks := 120
	if *outageDay {
		ticks = 2880
	}
	for b.Loop() {
		c := newOutageCluster(b)
		cfg := diskbuffer.DefaultConfig
		cfg.Dir = b.TempDir()
		l, err := diskbuffer.Open(cfg)
		require.NoError(b, err)

		start := time.Unix(1_700_000_000, 0)
		var frames []*encode.Frame // the hour's, for the live encode
		var appendTime time.Duration
		var hourBytes, keyBytes int64
		var hourStats diskbuffer.Stats
		samples := 0
		for i := range ticks {
			at := start.Add(time.Duration(i) * 30 * time.Second)
			if i > 0 {
				c.update(b, at)
			}
			f := c.frame(at.UnixMilli())
			t0 := time.Now()
			require.NoError(b, l.Append(f))
			appendTime += time.Since(t0)
			if i == 0 {
				keyBytes = l.Stats().Bytes
			}
			if i < 120 {
				frames = append(frames, f)
				samples += f.Samples()
			}
			if i == 119 {
				hourStats = l.Stats()
				hourBytes = hourStats.Bytes
			}
		}
		st := l.Stats()

		// Replay the hour's frames, as a drain after the outage would.
		var replay frameEncoder
		t0 := time.Now()
		replayed := 0
		for range 120 {
			f, info, err := l.Next()
			require.NoError(b, err)
			require.Equal(b, info.Samples, replay.encode(f))
			replayed += info.Samples
			require.NoError(b, l.Ack())
		}
		replayTime := time.Since(t0)
		require.Equal(b, samples, replayed)
		require.NoError(b, l.Close())

		var live frameEncoder
		t0 = time.Now()
		for _, f := range frames {
			live.encode(f)
		}
		liveTime := time.Since(t0)
		// The bytes differ a little: the log regenerates objects in an
		// order of its own, so requests batch other series together.

		mb := func(n int64) float64 { return float64(n) / (1 << 20) }
		b.ReportMetric(mb(hourBytes), "MB/hour")
		if *outageDay {
			b.ReportMetric(mb(st.Bytes), "MB/day")
		} else {
			// Steady state: a segment is a keyframe and deltas adding up
			// to delta_ratio times its size, so a day's deltas cost
			// 1/delta_ratio as much again in keyframes.
			deltas := hourBytes - int64(hourStats.Keyframes)*keyBytes
			day := float64(keyBytes) + 24*float64(deltas)*(1+1/cfg.DeltaRatio)
			b.ReportMetric(day/(1<<20), "MB/day-extrapolated")
		}
		b.ReportMetric(float64(hourStats.Keyframes), "keyframes/hour")
		b.ReportMetric(mb(keyBytes), "MB/keyframe")
		b.ReportMetric(float64(samples)/120, "samples/frame")
		b.ReportMetric(float64(appendTime.Nanoseconds())/float64(ticks), "append-ns/frame")
		rs := float64(replayTime.Nanoseconds()) / float64(replayed)
		ls := float64(liveTime.Nanoseconds()) / float64(samples)
		b.ReportMetric(rs, "replay-ns/sample")
		b.ReportMetric(ls, "live-ns/sample")
		b.ReportMetric(rs/ls, "replay/live")
		b.ReportMetric(float64(live.bytes)/120/(1<<20), "rw-MB/frame")
		fmt.Fprintf(b.Output(), "segments %d, keyframes %d of %d frames, %s\n", st.Segments, st.Keyframes, ticks, diskbuffer.SyncAlways)
	}
}
