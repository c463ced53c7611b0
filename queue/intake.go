package queue

// ReasonQueueFull is a whole snapshot dropped before it reached the
// endpoint's shards: the endpoint fell so far behind that the frames
// waiting in its feed passed their limit, and the oldest went (the feed
// never lets an endpoint hold back the snapshot loop).
const ReasonQueueFull = "queue_full"

// countDropped counts samples dropped for reason before they were
// appended: by the feed (a frame dropped whole as queue_full, or cut off
// at the stop deadline as shutdown). Safe to call from any goroutine.
func (e *Endpoint) countDropped(reason string, samples int) {
	if samples <= 0 {
		return
	}
	e.metrics.dropped[reason].Add(float64(samples))
}
