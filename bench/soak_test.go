package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestScheduleScalesWithTheDuration(t *testing.T) {
	nop := func(context.Context) error { return nil }
	cycle := func(context.Context, string) error { return nil }
	evs := schedule(time.Hour, nop, nop, nop, cycle, nop, nop, 20)
	at := map[string][]time.Duration{}
	for i, e := range evs {
		if i > 0 {
			require.GreaterOrEqual(t, e.at, evs[i-1].at, "in time order")
		}
		require.Less(t, e.at, time.Hour)
		name := e.name
		if len(name) > 9 && name[:9] == "namespace" {
			name = "namespace"
		}
		at[name] = append(at[name], e.at.Round(time.Second))
	}
	require.Equal(t, []time.Duration{9 * time.Minute}, at["receiver stopped"])
	require.Equal(t, []time.Duration{19 * time.Minute}, at["receiver started"], "ten minutes of outage")
	require.Equal(t, []time.Duration{20 * time.Minute, 40 * time.Minute}, at["reload"], "every twenty minutes")
	require.Len(t, at["namespace"], 11)
	require.Equal(t, 5*time.Minute, at["namespace"][0])
	require.Len(t, at["CRD created"], 6)
	require.Len(t, at["CRD deleted"], 6)

	// Five minutes: the same shape, twelve times shorter.
	short := schedule(5*time.Minute, nop, nop, nop, cycle, nop, nop, 20)
	require.Len(t, short, len(evs))
	for _, e := range short {
		if e.name == "receiver stopped" {
			require.Equal(t, 45*time.Second, e.at.Round(time.Second))
		}
	}
}

func TestSoakAgentConfigChangesOnReload(t *testing.T) {
	a := soakAgentConfig("kc", "http://r/api/v1/write", "127.0.0.1:1", "/b", time.Second, 0)
	b := soakAgentConfig("kc", "http://r/api/v1/write", "127.0.0.1:1", "/b", time.Second, 1)
	require.NotEqual(t, a, b)
	require.Contains(t, b, "[app, rev, tier]")
	require.Contains(t, a, `disk_buffer: {directory: "/b"}`)
}

func TestSoakSamplePeriod(t *testing.T) {
	require.Equal(t, time.Minute, soakOptions{duration: 2 * time.Hour}.samplePeriod())
	require.Equal(t, time.Minute, soakOptions{duration: time.Hour}.samplePeriod())
	require.Equal(t, 5*time.Second, soakOptions{duration: 5 * time.Minute}.samplePeriod())
}
