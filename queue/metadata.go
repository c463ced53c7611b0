package queue

import (
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
)

// runMetadata sends every family's metadata (HELP, TYPE) to a 1.0 endpoint
// every metadata_config.send_interval, in requests of their own, as
// Prometheus does; 2.0 carries it in each series instead. It sends only
// after the endpoint has accepted samples since the last round, so a standby
// replica, which sends no samples, sends no metadata either. It returns when
// Stop closes metaStop.
func (e *Endpoint) runMetadata() {
	defer close(e.metaDone)
	mc := e.cfg.MetadataConfig
	if !mc.Send || len(e.metadata) == 0 {
		return
	}
	reqs, err := encode.MetadataRequests(e.metadata, mc.MaxSamplesPerSend)
	if err != nil {
		e.log.Error("encoding metadata requests: metadata will not be sent", "err", err)
		return
	}
	perReq := make([]int, len(reqs))
	for i := range reqs {
		perReq[i] = min(mc.MaxSamplesPerSend, len(e.metadata)-i*mc.MaxSamplesPerSend)
	}
	t := time.NewTicker(mc.SendInterval)
	defer t.Stop()
	var seen int64
	for {
		select {
		case <-e.metaStop:
			return
		case <-t.C:
		}
		sent := e.sent.Load()
		if e.v2.Load() || sent == seen {
			continue
		}
		seen = sent
		for i, body := range reqs {
			// n = 0: the sample counters must not count metadata entries.
			if _, err := e.sender.send(e.sendCtx, body, 0, encode.ContentTypeV1, encode.VersionV1); err != nil {
				e.drops.log(e.log, "metadata", perReq[i], err)
				break
			}
			e.metrics.metadataSent.Add(float64(perReq[i]))
		}
	}
}
