// Package queue delivers encoded samples to one Remote-Write endpoint.
//
// An [Endpoint] owns a set of shards. [Endpoint.Append] routes each sample to
// the shard chosen by the hash of its labels, so every series always travels
// in one lane and keeps its order. Each shard batches up to
// max_samples_per_send samples (or what it has at batch_send_deadline),
// encodes them with package encode into one snappy-compressed
// prompb.WriteRequest, and sends it serially through a [go-retryablehttp]
// client:
//
//	Append ──hash % n──► shard ring ──batch──► encode ──► POST (retry 5xx, network, 429
//	                                                     │    until max_retry_duration)
//	                                                     ├─► 413: split in half, resend each
//	                                                     └─► drop + count other 4xx
//
// The queue never imports package watch: it only knows encoded samples.
//
// [go-retryablehttp]: https://github.com/hashicorp/go-retryablehttp
package queue
