package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"
)

// Mimir's tenancy and HA tracker labels (its defaults).
const (
	// MimirOrgHeader names the tenant of every request; Mimir answers 401
	// to a request without it.
	MimirOrgHeader = "X-Scope-OrgID"
	// MimirClusterLabel and MimirReplicaLabel are the HA tracker's labels.
	// Mimir reads them from the first series of a request only, stores one
	// replica's samples per cluster and drops the replica label.
	MimirClusterLabel = "cluster"
	MimirReplicaLabel = "__replica__"
)

// MimirOptions are the per-tenant limits and features a test turns on; the
// zero value is Mimir's defaults (no HA tracker, no out-of-order window).
type MimirOptions struct {
	// HATracker turns on the HA tracker for every tenant, with an
	// in-memory store (no Consul or etcd).
	HATracker bool
	// FailoverTimeout is how long the HA tracker waits without samples
	// from the elected replica before it takes another one; with
	// HATracker, 0 means the shortest Mimir allows (MimirMinFailover).
	FailoverTimeout time.Duration
	// OutOfOrderWindow accepts samples this much older than a series'
	// newest one; 0 (Mimir's default) refuses every out-of-order sample.
	OutOfOrderWindow time.Duration
	// NoLimits lifts the per-tenant ingestion rate and series limits
	// (10,000 samples a second and 150,000 series by default), and gives
	// the distributor a minute, not 2 s, to push to the ingester: a push
	// that takes longer is answered 5xx although the ingester stored it,
	// and a retry stores it twice. For runs of a large cluster's snapshots.
	NoLimits bool
}

// MimirMinFailover is the shortest HA failover timeout Mimir accepts with
// the update timeout Mimir is started with here (1 s, no jitter): it must be
// at least 1 s longer than update timeout + jitter
// (pkg/util/validation/limits.go, errInvalidFailoverTimeout).
const MimirMinFailover = 2 * time.Second

// Mimir is one Mimir process (-target=all: distributor, ingester, querier,
// query frontend and scheduler, store gateway, compactor, ruler) on
// 127.0.0.1, with filesystem storage in a folder of the test. Every ring
// advertises 127.0.0.1 (by default Mimir takes eth0's address) and
// memberlist gossips on loopback only.
type Mimir struct {
	// URL is the HTTP server: Remote-Write at WriteURL, Prometheus' API
	// under /prometheus.
	URL string
	// Proc is the running process.
	Proc *Process
	// Started is how long Mimir took to answer /ready.
	Started time.Duration
}

// StartMimir starts Mimir in dir and waits until /ready answers 200, which
// takes a few seconds.
func StartMimir(ctx context.Context, dir string, opts MimirOptions) (*Mimir, error) {
	bin, err := Binary("mimir")
	if err != nil {
		return nil, err
	}
	// http, grpc, memberlist.
	ports := make([]string, 3)
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = strconv.Itoa(p)
	}
	data := func(name string) string { return filepath.Join(dir, "mimir-data", name) }
	args := []string{
		"-target=all",
		"-log.level=warn",
		// Anonymous usage reports go to the internet.
		"-usage-stats.enabled=false",
		"-server.http-listen-address=127.0.0.1", "-server.http-listen-port=" + ports[0],
		"-server.grpc-listen-address=127.0.0.1", "-server.grpc-listen-port=" + ports[1],
		"-memberlist.bind-addr=127.0.0.1", "-memberlist.bind-port=" + ports[2],
		"-memberlist.advertise-addr=127.0.0.1", "-memberlist.advertise-port=" + ports[2],
		"-common.storage.backend=filesystem",
		"-common.storage.filesystem.dir=" + data("common"),
		"-blocks-storage.backend=filesystem",
		"-blocks-storage.filesystem.dir=" + data("blocks"),
		"-blocks-storage.tsdb.dir=" + data("tsdb"),
		"-blocks-storage.bucket-store.sync-dir=" + data("tsdb-sync"),
		"-compactor.data-dir=" + data("compactor"),
		"-ruler-storage.backend=filesystem",
		"-ruler-storage.filesystem.dir=" + data("rules"),
		"-ruler.rule-path=" + data("ruler"),
		// Its default is a file in the working directory.
		"-activity-tracker.filepath=",
		"-ingester.ring.replication-factor=1",
		"-ingester.ring.min-ready-duration=0s",
		"-ingester.ring.final-sleep=0s",
		"-store-gateway.sharding-ring.replication-factor=1",
	}
	for _, ring := range []string{"distributor.ring", "ingester.ring", "querier.ring", "query-scheduler.ring",
		"store-gateway.sharding-ring", "compactor.ring", "ruler.ring", "overrides-exporter.ring", "alertmanager.sharding-ring"} {
		args = append(args, "-"+ring+".instance-addr=127.0.0.1")
	}
	args = append(args, "-query-frontend.instance-addr=127.0.0.1")
	if opts.HATracker {
		failover := opts.FailoverTimeout
		if failover == 0 {
			failover = MimirMinFailover
		}
		args = append(args,
			"-distributor.ha-tracker.enable=true",
			"-distributor.ha-tracker.enable-for-all-users=true",
			"-distributor.ha-tracker.store=inmemory",
			// The elected replica's time is written at most every update
			// timeout; failover needs it that fresh.
			"-distributor.ha-tracker.update-timeout=1s",
			"-distributor.ha-tracker.update-timeout-jitter-max=0s",
			"-distributor.ha-tracker.failover-timeout="+failover.String(),
		)
	}
	if opts.NoLimits {
		args = append(args,
			"-distributor.ingestion-rate-limit=1e9", "-distributor.ingestion-burst-size=1000000000",
			"-ingester.max-global-series-per-user=0", "-ingester.max-global-series-per-metric=0",
			"-distributor.remote-timeout=1m")
	}
	if opts.OutOfOrderWindow > 0 {
		args = append(args, "-ingester.out-of-order-time-window="+opts.OutOfOrderWindow.String())
	}
	m := &Mimir{URL: "http://127.0.0.1:" + ports[0]}
	start := time.Now()
	m.Proc, err = Start(dir, "mimir", bin, args...)
	if err != nil {
		return nil, err
	}
	if err := m.Proc.waitReady(ctx, httpOK(http.DefaultClient, m.URL+"/ready", nil)); err != nil {
		m.Proc.Kill()
		return nil, err
	}
	m.Started = time.Since(start)
	return m, nil
}

// WriteURL is Mimir's Remote-Write URL (1.0 and 2.0). Send the tenant in
// MimirOrgHeader.
func (m *Mimir) WriteURL() string { return m.URL + "/api/v1/push" }

// Query runs an instant query for tenant through Mimir's Prometheus API.
func (m *Mimir) Query(ctx context.Context, tenant, q string) ([]Sample, error) {
	return queryVector(ctx, m.URL+"/prometheus", q, http.Header{MimirOrgHeader: {tenant}})
}

// QueryAt runs an instant query for tenant evaluated at time at.
func (m *Mimir) QueryAt(ctx context.Context, tenant, q string, at time.Time) ([]Sample, error) {
	return queryVectorAt(ctx, m.URL+"/prometheus", q, at, http.Header{MimirOrgHeader: {tenant}})
}

// Metadata returns the HELP and TYPE tenant's series of metric carry, as
// Mimir's /api/v1/metadata lists them.
func (m *Mimir) Metadata(ctx context.Context, tenant, metric string) ([]MimirMetadata, error) {
	u := m.URL + "/prometheus/api/v1/metadata?metric=" + url.QueryEscape(metric)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("reading metadata of %s: %w", metric, err)
	}
	req.Header.Set(MimirOrgHeader, tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading metadata of %s: %w", metric, err)
	}
	defer drainClose(resp.Body)
	var body struct {
		Status string                     `json:"status"`
		Error  string                     `json:"error"`
		Data   map[string][]MimirMetadata `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("reading metadata of %s: decoding answer (status %d): %w", metric, resp.StatusCode, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("reading metadata of %s: status %d: %s", metric, resp.StatusCode, body.Error)
	}
	return body.Data[metric], nil
}

// MimirMetadata is one entry of Mimir's /api/v1/metadata.
type MimirMetadata struct {
	Type string `json:"type"`
	Help string `json:"help"`
	Unit string `json:"unit"`
}

// RawSamples returns every sample tenant's series matching selector hold in
// the window before now, as Prometheus.RawSamples does.
func (m *Mimir) RawSamples(ctx context.Context, tenant, selector string, window time.Duration) ([]ExportedSeries, error) {
	return rawSamples(ctx, m.URL+"/prometheus", http.Header{MimirOrgHeader: {tenant}}, selector, window)
}

// Stop stops Mimir.
func (m *Mimir) Stop() {
	if m == nil {
		return
	}
	m.Proc.Stop(10 * time.Second)
}
