package queue

// ReasonQueueFull is a whole snapshot dropped before it reached the
// endpoint's queue: the endpoint fell so far behind that the snapshots
// waiting for it passed their limit, and the oldest went (the agent's
// feed, which never lets an endpoint hold back the snapshot loop).
const ReasonQueueFull = "queue_full"

// CountDropped counts samples dropped for reason before they were
// appended: by the producer in front of the endpoint (a snapshot dropped
// whole as queue_full, or cut off at the stop deadline as shutdown). Safe
// to call at any time, from any goroutine.
func (e *Endpoint) CountDropped(reason string, samples int) {
	if samples <= 0 {
		return
	}
	e.metrics.dropped[reason].Add(float64(samples))
}
