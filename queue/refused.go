package queue

import (
	"fmt"
	"math/bits"
	"net/http"
	"strings"

	"github.com/kube-state-push/kube-state-push/encode"
)

// A receiver refuses a request as bad data (400, or 409 from Thanos
// receive) for the sake of one series: a label it does not accept, a
// sample out of order or out of bounds. Dropping the whole batch would
// cost every other series in it, on every snapshot while the bad series
// lasts. So a refused batch is split in halves, and each refused half
// again, until the refused samples are alone: one bad series among n
// costs about 2·log2(n) more requests, and only itself.
//
// Receivers differ in what they keep of a refused request. Prometheus
// rolls a 1.0 request back whole on its first out-of-bounds or
// out-of-order sample, and skips series with invalid labels while
// answering 204 (storage/remote/write_handler.go). A 2.0 receiver stores
// the good series and says how many in
// X-Prometheus-Remote-Write-Samples-Written; that answer is taken as it is,
// without a split. Mimir keeps the good samples of a 1.0 request too, and
// says nothing: a half sent again then holds samples it already stored,
// which it accepts again when identical, but refuses as out of order when
// a newer sample of the series came in the same batch (storedBefore).
// VictoriaMetrics skips the series it does not take (too many labels, too
// long a name or value) and answers 204.

// splitsPerRefusedSeries is how many refused series a budget pays the
// isolation of, at two requests per halving. A batch in which every
// sample is refused (each with a label the receiver does not take, say)
// would otherwise cost twice as many requests as it has samples.
const splitsPerRefusedSeries = 4

// bisection is the splitting of one refused batch: what it may still
// cost, and the batch it started from.
type bisection struct {
	// left is how many more requests the bisection may make.
	left int
	// root is the refused batch the bisection started from.
	root []encode.Sample
}

// newBisection starts the bisection of root, refused whole. It may make
// splitsPerRefusedSeries times the requests that isolating one series
// takes (two per halving, log2 of the batch's size halvings).
func newBisection(root []encode.Sample) *bisection {
	depth := bits.Len(uint(len(root) - 1))
	return &bisection{left: 2 * depth * splitsPerRefusedSeries, root: root}
}

// take reports whether the budget pays for one more split (two requests),
// and spends it if so. Once it is spent, a refused part is dropped whole.
func (b *bisection) take() bool {
	if b.left < 2 {
		return false
	}
	b.left -= 2
	return true
}

// refusedForTheirTime reports whether every sample of batch is refused,
// so that splitting it would only cost requests: the answer refuses
// samples for their age, which receivers judge by the timestamp alone (a
// head's lowest valid time, not a series'), and every sample has the same
// timestamp, as the samples of one snapshot do. A batch after an outage
// that the receiver's window has passed is then dropped whole, at once.
func refusedForTheirTime(batch []encode.Sample, herr *HTTPError) bool {
	if herr.Reason() != ReasonTooOld {
		return false
	}
	for i := range batch {
		if batch[i].Timestamp != batch[0].Timestamp {
			return false
		}
	}
	return true
}

// refusedAsBadData reports whether an answer refuses the request for its
// content: resending it as it is would be refused again.
func refusedAsBadData(herr *HTTPError) bool {
	return herr.Status == http.StatusBadRequest || herr.Status == http.StatusConflict
}

// partialWrite accounts for a 2.0 request refused as bad data whose answer
// says the receiver stored stored samples of it all the same: those are
// sent, the rest dropped by the answer's reason. Which ones were stored the
// answer does not say, so the load counters take the first ones.
func (e *Endpoint) partialWrite(batch []encode.Sample, stored int, herr *HTTPError, d delivery) {
	n := len(batch)
	if stored > 0 {
		e.metrics.sent.Add(float64(stored))
		e.sent.Add(int64(stored))
		e.load.settled(batch[:stored], true)
	}
	if refused := n - stored; refused > 0 {
		reason := e.refusedReason(batch[stored:], herr, d)
		e.metrics.dropped[reason].Add(float64(refused))
		e.load.settled(batch[stored:], false)
		e.drops.log(e.log, reason, refused, fmt.Errorf("endpoint wrote %d of %d samples: %w", stored, n, herr))
	}
}

// refusedReason is the drop reason for batch, answered with herr: the
// answer's own (HTTPError.Reason), apart from samples that were most
// likely stored before, counted as resent.
func (e *Endpoint) refusedReason(batch []encode.Sample, herr *HTTPError, d delivery) string {
	reason := herr.Reason()
	if reason != ReasonBadRequest && reason != ReasonConflict {
		return reason
	}
	switch {
	case d.resent:
		// Most likely stored before the restart: Prometheus refuses a
		// resent batch once it holds newer samples, Thanos always.
		return ReasonResent
	case d.split != nil && len(batch) == 1 && storedBefore(d.split.root, &batch[0], herr):
		return ReasonResent
	}
	return reason
}

// storedBefore reports whether s, refused on its own while its batch was
// split, is most likely a sample the receiver stored from the whole batch:
// the answer says out of order or duplicate, and the batch held a newer
// sample of the same series. A receiver that keeps the good samples of a
// refused request stored both, and now refuses the older one sent again.
func storedBefore(root []encode.Sample, s *encode.Sample, herr *HTTPError) bool {
	if !alreadyHeldAnswer(herr.Body) {
		return false
	}
	for i := range root {
		r := &root[i]
		if r.Timestamp > s.Timestamp && encode.EqualLabels(r.Labels, s.Labels) {
			return true
		}
	}
	return false
}

// alreadyHeldMarkers are what receivers write in the body of an answer that
// refuses a sample because the series holds a sample at or after its
// timestamp. As tooOldMarkers, they only name a drop reason.
var alreadyHeldMarkers = []string{
	"out of order",        // Prometheus tsdb storage.ErrOutOfOrderSample, Thanos receive
	"duplicate sample",    // storage.ErrDuplicateSampleForTimestamp
	"sample-out-of-order", // Mimir: err-mimir-sample-out-of-order
	"duplicate-timestamp", // Mimir: err-mimir-sample-duplicate-timestamp
}

// alreadyHeldAnswer reports whether an error answer's body says the series
// already holds a sample at or after the refused one's timestamp.
func alreadyHeldAnswer(body string) bool {
	b := strings.ToLower(body)
	for _, m := range alreadyHeldMarkers {
		if strings.Contains(b, m) {
			return true
		}
	}
	return false
}
