package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// Thanos tenancy: the header a receive reads the tenant from, and the label
// it stores each tenant's series under (both Thanos' defaults).
const (
	// ThanosTenantHeader names the tenant of a write request.
	ThanosTenantHeader = "THANOS-TENANT"
	// ThanosTenantLabel carries the tenant on every series a query returns.
	ThanosTenantLabel = "tenant_id"
	// ThanosDefaultTenant is the tenant of requests without the header.
	ThanosDefaultTenant = "default-tenant"
	// ThanosReplicaLabel is the external label the receive announces; a
	// query returns it on every series.
	ThanosReplicaLabel = "receive_replica"
)

// Thanos is a Thanos receive (one ingesting node, no hashring, no object
// storage) and a Thanos query reading it through the receive's gRPC Store
// API, both on 127.0.0.1. The receive answers 409 Conflict to out-of-order,
// duplicate and too old samples, and to unsorted labels.
type Thanos struct {
	// ReceiveURL is the receive's remote-write server; WriteURL is the
	// write path on it.
	ReceiveURL string
	// QueryURL is the query's HTTP API (Prometheus' /api/v1/query and so on).
	QueryURL string
	// MetricsURL is the receive's own metrics.
	MetricsURL string
	// ReceiveProc and QueryProc are the running processes.
	ReceiveProc, QueryProc *Process
	// storeAddr is the receive's gRPC Store API address.
	storeAddr string
}

// StartThanos starts a Thanos receive and a Thanos query in dir and waits
// until the query sees the receive as a store, which takes about 5 s.
func StartThanos(ctx context.Context, dir string) (*Thanos, error) {
	bin, err := Binary("thanos")
	if err != nil {
		return nil, err
	}
	// receive: http, grpc, remote write, capnproto; query: http, grpc.
	ports := make([]int, 6)
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			return nil, err
		}
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	th := &Thanos{
		ReceiveURL: "http://" + addr(2),
		QueryURL:   "http://" + addr(4),
		MetricsURL: "http://" + addr(0) + "/metrics",
		storeAddr:  addr(1),
	}
	ok := false
	defer func() {
		if !ok {
			th.Stop()
		}
	}()
	th.ReceiveProc, err = Start(dir, "thanos-receive", bin, "receive",
		"--http-address="+addr(0),
		"--grpc-address="+addr(1),
		"--remote-write.address="+addr(2),
		"--receive.capnproto-address="+addr(3),
		"--tsdb.path="+filepath.Join(dir, "thanos-receive-data"),
		// No retention: with one, v0.42.4 prunes its tenants whenever the
		// minute of the day is a multiple of 4 h (2 x the block duration),
		// and a prune while a tenant's TSDB is still opening dereferences
		// nil and kills the receive (seen at 20:00 UTC). Tests keep data
		// minutes, not days.
		"--tsdb.retention=0d",
		"--label="+ThanosReplicaLabel+`="0"`,
		"--http-grace-period=0s", "--grpc-grace-period=0s",
		"--log.level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := th.ReceiveProc.waitReady(ctx, httpOK(http.DefaultClient, "http://"+addr(0)+"/-/ready", nil)); err != nil {
		return nil, err
	}
	th.QueryProc, err = Start(dir, "thanos-query", bin, "query",
		"--http-address="+addr(4),
		"--grpc-address="+addr(5),
		"--endpoint="+th.storeAddr,
		"--http-grace-period=0s", "--grpc-grace-period=0s",
		"--log.level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := th.QueryProc.waitReady(ctx, th.storeKnown); err != nil {
		return nil, err
	}
	ok = true
	return th, nil
}

// storeKnown succeeds once the query lists the receive as a healthy store.
func (th *Thanos) storeKnown(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, th.QueryURL+"/api/v1/stores", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer drainClose(resp.Body)
	var body struct {
		Data map[string][]struct {
			Name      string  `json:"name"`
			LastError *string `json:"lastError"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("decoding /api/v1/stores (status %d): %w", resp.StatusCode, err)
	}
	for _, stores := range body.Data {
		for _, s := range stores {
			if s.Name == th.storeAddr && s.LastError == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("the query does not list the receive's store %s yet", th.storeAddr)
}

// WriteURL is the receive's Remote-Write URL. Send the tenant in
// ThanosTenantHeader; without it, data goes to ThanosDefaultTenant.
func (th *Thanos) WriteURL() string { return th.ReceiveURL + "/api/v1/receive" }

// Query runs an instant query through Thanos query and returns its vector
// result. Every series carries ThanosTenantLabel and ThanosReplicaLabel;
// select a tenant with a matcher on ThanosTenantLabel. A query naming a
// tenant the query has not yet seen announced by the receive (it refreshes
// every 5 s) finds nothing, so poll.
func (th *Thanos) Query(ctx context.Context, q string) ([]Sample, error) {
	return queryVector(ctx, th.QueryURL, q, nil)
}

// Stop stops the query, then the receive.
func (th *Thanos) Stop() {
	th.QueryProc.Stop(10 * time.Second)
	th.ReceiveProc.Stop(10 * time.Second)
}
