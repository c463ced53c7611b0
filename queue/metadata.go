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
	if !mc.Send {
		return
	}
	t := time.NewTicker(mc.SendInterval)
	defer t.Stop()
	// reqs are the encoded requests of md, with perReq entries each; they
	// are encoded again when SetMetadata replaces the metadata.
	var (
		md     *map[string]encode.Metadata
		reqs   [][]byte
		perReq []int
	)
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
		if cur := e.metadata.Load(); cur != md {
			md = cur
			var err error
			if reqs, err = encode.MetadataRequests(*md, mc.MaxSamplesPerSend); err != nil {
				e.log.Error("encoding metadata requests: metadata will not be sent", "err", err)
				reqs = nil
			}
			perReq = perReq[:0]
			for i := range reqs {
				perReq = append(perReq, min(mc.MaxSamplesPerSend, len(*md)-i*mc.MaxSamplesPerSend))
			}
		}
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
