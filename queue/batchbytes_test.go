package queue

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/stretchr/testify/require"

	"github.com/kube-state-push/kube-state-push/encode"
)

// A receiver that refuses bodies past a size with 413 gets none from an
// endpoint whose max_bytes_per_send is that size: batches close before
// they pass it, every series arrives in order, and a series larger alone
// is dropped and counted, in memory and with a disk buffer.
func TestMaxBytesPerSend(t *testing.T) {
	const limit = 2048
	for _, tc := range []struct {
		name        string
		disk, unset bool
	}{{"memory", false, false}, {"disk", true, false}, {"unset", false, true}} {
		disk := tc.disk
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex // guards sizes, refused and got
			var sizes []int
			var refused int
			var got []gotSample
			srv := newTestServer(t, nil)
			// Check the decoded size before the recorder sees the body.
			inner := srv.Config.Handler
			srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(r.Body)
				require.NoError(t, err)
				raw, err := s2.Decode(nil, body)
				require.NoError(t, err)
				mu.Lock()
				defer mu.Unlock()
				if len(raw) > limit {
					refused++
					http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
					return
				}
				sizes = append(sizes, len(raw))
				samples, err := decodeBody(strings.NewReader(string(body)))
				require.NoError(t, err)
				got = append(got, samples...)
				r.Body = io.NopCloser(strings.NewReader(string(body)))
				inner.ServeHTTP(w, r)
			})
			e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
				if !tc.unset {
					c.QueueConfig.MaxBytesPerSend = limit
				}
				c.QueueConfig.MaxSamplesPerSend = 1000 // never reached
				c.QueueConfig.BatchSendDeadline = 10 * time.Millisecond
				if disk {
					c.DiskBuffer.Directory = t.TempDir()
				}
			})
			// Series of 50 to 550 bytes, and one of 3,000 in the middle.
			var in []Item
			for i := range 60 {
				in = append(in, item(fmt.Sprintf("s%02d-%s", i, strings.Repeat("x", (i%6)*100)), float64(i), 1000))
			}
			big := item("big-"+strings.Repeat("y", 3000), 1, 1000)
			require.Greater(t, encode.SeriesSize(&big.Sample), limit)
			all := append(append(append([]Item{}, in[:30]...), big), in[30:]...)
			require.Equal(t, len(all), e.appendItems(t.Context(), all))
			require.NoError(t, stop(t, e, 10*time.Second))

			mu.Lock()
			defer mu.Unlock()
			if tc.unset {
				// The test can fail: with the default, batches pass the
				// receiver's limit.
				require.Positive(t, refused)
				return
			}
			require.Zero(t, refused, "no request past the limit")
			require.Len(t, got, len(in))
			for i := range got {
				require.True(t, strings.HasPrefix(got[i].series, fmt.Sprintf("s%02d-", i)), "in order: %d is %s", i, got[i].series)
				require.Equal(t, in[i].Value, got[i].value)
			}
			require.Greater(t, len(sizes), 5, "the bytes, not the samples, closed the batches")
			for _, s := range sizes {
				require.LessOrEqual(t, s, limit)
			}
			require.Equal(t, 1.0, counter(t, m.samplesDropped, ReasonSeriesTooLarge))
			for _, r := range reasons {
				if r != ReasonSeriesTooLarge {
					require.Zero(t, counter(t, m.samplesDropped, r), "dropped %s", r)
				}
			}
			require.Equal(t, float64(len(in)), counter(t, m.samplesSent))
			require.Zero(t, gaugeOf(t, m, "queue_length"))
			t.Logf("%d requests of %d to %d bytes", len(sizes), minOf(sizes), maxOf(sizes))
		})
	}
}

func minOf(s []int) int {
	m := s[0]
	for _, v := range s {
		m = min(m, v)
	}
	return m
}

func maxOf(s []int) int {
	m := s[0]
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// Measuring a batch's bytes allocates nothing, and cuts it where the limit
// falls.
func TestFitBytes(t *testing.T) {
	in := items(100, 1000)
	batch := make([]encode.Sample, len(in))
	for i := range in {
		batch[i] = in[i].Sample
	}
	require.Zero(t, testing.AllocsPerRun(20, func() { fitBytes(batch, 8<<20) }))
	require.Equal(t, len(batch), fitBytes(batch, 8<<20))
	three := encode.SeriesSize(&batch[0]) + encode.SeriesSize(&batch[1]) + encode.SeriesSize(&batch[2])
	require.Equal(t, 3, fitBytes(batch, three))
	require.Equal(t, 2, fitBytes(batch, three-1))
	require.Zero(t, fitBytes(batch, encode.SeriesSize(&batch[0])-1))
}

// A 2.0 request whose HELP text outweighs what its symbols save passes the
// limit though each of its series fits it as 1.0: the batch is halved until
// each series is alone, and a series still too large is dropped. The
// delivery ends.
func TestMaxBytesPerSendPastOnlyAsEncoded(t *testing.T) {
	srv := newTestServer(t, nil)
	e, m := newTestEndpoint(t, srv.URL, func(c *Config) {
		c.ProtobufMessage = ProtoV2
		c.QueueConfig.MaxBytesPerSend = 2048
		c.QueueConfig.BatchSendDeadline = 10 * time.Millisecond
	})
	e.SetMetadata(map[string]encode.Metadata{"test_metric": {Type: encode.TypeGauge, Help: strings.Repeat("h", 3000)}})
	in := items(8, 1000)
	for i := range in {
		require.Less(t, encode.SeriesSize(&in[i].Sample), 2048/4, "four fit as 1.0")
	}
	require.Equal(t, len(in), e.appendItems(t.Context(), in))
	require.NoError(t, stop(t, e, 10*time.Second))
	require.Equal(t, float64(len(in)), counter(t, m.samplesDropped, ReasonSeriesTooLarge))
	require.Zero(t, counter(t, m.samplesSent))
}
