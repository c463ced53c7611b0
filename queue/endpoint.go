package queue

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/queue/diskbuffer"
)

// Options are what an Endpoint needs beyond its Config.
type Options struct {
	// Logger receives the endpoint's logs.
	Logger *slog.Logger
	// Metrics are shared by all endpoints of the agent.
	Metrics *Metrics
	// UserAgent is sent with every request.
	UserAgent string
	// Metadata is the type, help and unit of every family the agent sends,
	// by metric name: inline in every 2.0 series, and in metadata requests
	// of their own to a 1.0 endpoint (metadata_config). Nil sends none.
	Metadata map[string]encode.Metadata
	// DiskFS is the disk buffer's filesystem; nil is the operating
	// system's. For tests that make the disk fail.
	DiskFS diskbuffer.FS
	// After, when not nil, holds back sending until it is closed: the
	// endpoint takes over from another on the same receiver, which must
	// have sent what it holds first, so that each series stays in order.
	// Samples queue meanwhile.
	After <-chan struct{}
	// FramesWaiting returns how many offered frames may wait for the
	// shards before the oldest is dropped; read at every Offer, as
	// snapshot_interval may change on a reload. Nil is
	// defaultFramesWaiting.
	FramesWaiting func() int
}

// defaultFramesWaiting is how many frames may wait without
// Options.FramesWaiting.
const defaultFramesWaiting = 10

// Item is one sample to send, with the hash of its labels that picks its
// shard.
type Item struct {
	encode.Sample
	// Hash is the series' label hash (encode.Ref.Hash).
	Hash uint64
}

// Endpoint delivers the frames offered to it to one remote_write URL: its
// feed (feed.go) hands their samples to shards whose number follows the
// load (shards.go, reshard.go). With disk_buffer, whole frames are kept in
// the disk buffer until the shards have delivered them (diskbuffer.go). Delivery of a batch is in deliver.go, the
// logging of drops in droplog.go.
type Endpoint struct {
	// cfg is the endpoint's validated configuration.
	cfg Config
	// log has the endpoint's name attached.
	log *slog.Logger
	// metrics are this endpoint's self-metrics.
	metrics *endpointMetrics
	// sender posts batches.
	sender *sender
	// disk is the disk buffer; nil keeps batches in memory.
	disk *diskState
	feed *feed

	// cur is the generation appendItems queues to. Only the feed (appendItems,
	// and New and Start before it) uses it.
	cur *generation
	// mu guards gens.
	mu sync.Mutex
	// gens are the generations whose shards may still run, oldest first;
	// the last is cur.
	gens []*generation
	// shardCount is the number of shards of cur, for the resharding loop.
	shardCount atomic.Int64
	// want is the shard count the resharding loop asks for; 0 for no
	// change.
	want atomic.Int64
	// load is what the resharding loop measures.
	load loadCounters
	// reshardEvery is the resharding interval (reshardInterval; shorter in
	// tests).
	reshardEvery time.Duration
	// reshardStop ends the resharding loop; reshardDone is closed when it
	// ended.
	reshardStop, reshardDone chan struct{}

	// staging holds one scratch list per shard for appendItems with more than
	// one shard, reused between calls; only the feed touches it.
	staging [][]Item
	// drops rate-limits the log lines about dropped batches; keeps those
	// about batches kept in the disk buffer after their retries ended.
	drops, keeps dropLog
	// v2 is true while the endpoint is sent Remote-Write 2.0; it turns
	// false, for the rest of the process' life, when the endpoint shows it
	// speaks only 1.0 (fallBack).
	v2 atomic.Bool
	// vm is true while the endpoint is sent VictoriaMetrics' protocol
	// (protocol.go); it takes precedence over v2.
	vm atomic.Bool
	// nego is protocol: auto's probe; nil for the other protocols.
	nego *negotiation
	// metadata is Options.Metadata, or what SetMetadata set since;
	// metadataLookup reads it for 2.0 encoders.
	metadata       atomic.Pointer[map[string]encode.Metadata]
	metadataLookup encode.MetadataFunc
	// sent counts samples accepted, so that metadata is sent only by an
	// endpoint that sends samples (a standby replica sends neither).
	sent atomic.Int64
	// metaStop ends the metadata loop; metaDone is closed when it ended.
	metaStop, metaDone chan struct{}

	// sendCtx is the context of in-flight requests; cancelSend ends them
	// after the stop deadline.
	sendCtx    context.Context
	cancelSend context.CancelFunc
	// shutdownDrops counts the samples the shards dropped because the send
	// context was cancelled (in flight or taken at the stop deadline), so
	// that Stop reports them along with what was still queued.
	shutdownDrops atomic.Int64
	// leftOnDisk is how many samples Stop left in the disk buffer for the
	// next start.
	leftOnDisk atomic.Int64
}

// New builds an endpoint from a validated Config. Nothing runs until Start.
func New(cfg Config, o Options) (*Endpoint, error) {
	hc, err := newHTTPClient(&cfg, net.DefaultResolver)
	if err != nil {
		return nil, err
	}
	m := o.Metrics.forEndpoint(cfg.Name)
	e := &Endpoint{
		cfg:          cfg,
		log:          o.Logger.With("endpoint", cfg.Name),
		metrics:      m,
		metaStop:     make(chan struct{}),
		metaDone:     make(chan struct{}),
		reshardEvery: reshardInterval,
		reshardStop:  make(chan struct{}),
		reshardDone:  make(chan struct{}),
	}
	// The sender counts retries in samples_failed_total; the resharder
	// needs to know of them too.
	m.failed = retryCounter{Counter: m.failed, retries: &e.load.retries}
	e.sender = newSender(&cfg, hc, o.UserAgent, m)
	if cfg.FailedRequestLogging {
		e.sender.failedRequests = e.log
	}
	e.SetMetadata(o.Metadata)
	e.metadataLookup = func(name string) (encode.Metadata, bool) {
		md, ok := (*e.metadata.Load())[name]
		return md, ok
	}
	switch cfg.Protocol {
	case ProtocolVictoriaMetrics:
		e.vm.Store(true)
		m.vmProtocol.Set(1)
	case ProtocolAuto:
		// Remote-Write 2.0 until the probe says otherwise (protocol.go).
		e.v2.Store(true)
		e.nego = &negotiation{retry: probeRetry}
	default:
		e.v2.Store(cfg.ProtobufMessage == ProtoV2)
	}
	m.protocol.Set(protocolVersion(e.v2.Load()))
	e.drops.every = time.Minute
	e.keeps.every, e.keeps.kept = time.Minute, true
	if cfg.DiskBuffer.Enabled() {
		if err := e.openDisk(o.DiskFS); err != nil {
			return nil, fmt.Errorf("endpoint %q: disk_buffer %s: %w", cfg.Name, cfg.DiskBuffer.Directory, err)
		}
	}
	var app appender = e
	if len(cfg.WriteRelabelConfigs) > 0 || cfg.SeriesLimits.enabled() {
		rl := newRelabeler(e, cfg.WriteRelabelConfigs, e.log)
		rl.limits = cfg.SeriesLimits
		rl.dropped, rl.truncated = e.metrics.dropped, e.metrics.truncated
		app = rl
	}
	waiting := o.FramesWaiting
	if waiting == nil {
		waiting = func() int { return defaultFramesWaiting }
	}
	e.feed = newFeed(app, e.countDropped, waiting)
	e.feed.newestFirst = cfg.Backfill == BackfillNewestFirst
	if e.disk != nil {
		e.feed.disk = e
		e.feed.thin = newThinner(&cfg, m.buf.thinned)
	}
	e.gens = []*generation{e.newGeneration(cfg.QueueConfig.MinShards, o.After)}
	e.cur = e.gens[len(e.gens)-1]
	n := len(e.cur.shards)
	e.shardCount.Store(int64(n))
	m.shards.Set(float64(n))
	return e, nil
}

// Close releases what New took for an endpoint that is never started: its
// disk buffer (whose data stays for the next endpoint on the directory) and
// the directory's lock. A started endpoint is ended with Stop instead.
func (e *Endpoint) Close() { e.closeDisk() }

// SetMetadata replaces the families' metadata (Options.Metadata), as a
// reload that changes the families selected does: 2.0 requests carry the new
// metadata from the next batch, 1.0 metadata requests from the next round.
// Safe to call at any time.
func (e *Endpoint) SetMetadata(md map[string]encode.Metadata) {
	e.metadata.Store(&md)
}

// Name is the endpoint's configured name.
func (e *Endpoint) Name() string { return e.cfg.Name }

// Start starts the feed, the shards and the resharding loop. Requests run
// until Stop.
func (e *Endpoint) Start() {
	e.startShards()
	e.feed.start()
}

// startShards starts all of the endpoint but its feed: the shards, the
// resharding and the metadata loops. Tests that hand the shards samples,
// or drive the disk buffer, themselves start only these.
func (e *Endpoint) startShards() {
	e.sendCtx, e.cancelSend = context.WithCancel(context.Background())
	for _, g := range e.gens {
		e.startGeneration(g)
	}
	go e.runResharding()
	go e.runMetadata()
}

// Offer hands the endpoint a frame, which it holds until it has sent it,
// written it to its disk buffer, or dropped it; the caller may release its
// own hold at once. Offer never blocks: when too many frames wait, the
// oldest is dropped whole and counted as queue_full. Call it from one
// goroutine, between Start and Stop.
func (e *Endpoint) Offer(fr *Frame) { e.feed.offer(fr) }

// appendItems queues items, each on the shard its hash picks, in order. It
// blocks while a shard is full, until ctx ends, and returns the number of
// items queued. Only the feed's goroutine calls it (with a disk buffer,
// the replayer), and not after Stop.
func (e *Endpoint) appendItems(ctx context.Context, items []Item) int {
	e.maybeReshard()
	g := e.cur
	newest := int64(math.MinInt64)
	for i := range items {
		newest = max(newest, items[i].Timestamp)
	}
	queued := 0
	if len(g.shards) == 1 {
		// One shard takes them all as they are, with no staging copy.
		queued = e.appendShard(ctx, g.shards[0], items)
	} else {
		n := uint64(len(g.shards))
		for len(e.staging) < len(g.shards) {
			e.staging = append(e.staging, nil)
		}
		staging := e.staging[:n]
		for i := range staging {
			staging[i] = staging[i][:0]
		}
		for i := range items {
			k := items[i].Hash % n
			staging[k] = append(staging[k], items[i])
		}
		for i, l := range g.shards {
			if len(staging[i]) == 0 {
				continue
			}
			queued += e.appendShard(ctx, l, staging[i])
			clear(staging[i]) // drop label references for the GC
		}
	}
	e.load.in.Add(int64(queued))
	if queued > 0 {
		storeMax(&e.load.highestIn, newest)
	}
	return queued
}

// appendShard pushes items onto one shard's ring and counts them; it returns
// how many it pushed.
func (e *Endpoint) appendShard(ctx context.Context, l *shard, items []Item) int {
	k := l.ring.push(ctx, items)
	l.appended.Add(int64(k))
	if e.disk == nil {
		// With a disk buffer queue_length counts the frames not yet
		// acknowledged instead (diskbuffer.go).
		e.metrics.queueLength.Add(float64(k))
	}
	return k
}

// flush tells the shards that the feed has handed over a whole frame: they
// send their last, partial batch now rather than after
// batch_send_deadline, so a snapshot arrives complete one send after it was
// taken. flush never blocks; like appendItems, it is called by the feed.
func (e *Endpoint) flush() {
	for _, l := range e.cur.shards {
		signal(l.kick)
	}
}

// LeftOnDisk is how many samples the last Stop left in the disk buffer for
// the next start; 0 when it delivered everything.
func (e *Endpoint) LeftOnDisk() int { return int(e.leftOnDisk.Load()) }

// Stop takes no more frames, hands the shards those waiting (with a disk
// buffer: writes them, and replays the buffer), flushes what is queued and
// waits for it to be sent, all until ctx ends; then it cancels the
// requests in flight. In memory, what was left is counted as dropped, and
// what the shards held makes Stop's error; with a disk buffer it stays
// there for the next start.
func (e *Endpoint) Stop(ctx context.Context) error {
	e.feed.stop(ctx)
	close(e.metaStop)
	defer func() {
		<-e.metaDone // after cancelSend, which ends its request
		// Nothing sends any more: close the keep-alive connections now
		// rather than after their idle timeout (5 minutes), so that a
		// reload that replaces the endpoint leaves no descriptors and
		// goroutines behind.
		e.sender.client.HTTPClient.CloseIdleConnections()
	}()
	close(e.reshardStop)
	<-e.reshardDone
	gens := e.liveGenerations()
	for _, g := range gens {
		for _, l := range g.shards {
			l.flushNow()
		}
	}
	done := make(chan struct{})
	go func() {
		for _, g := range gens {
			<-g.done
		}
		close(done)
	}()
	select {
	case <-done:
		e.cancelSend()
		e.closeDisk()
		return nil
	case <-ctx.Done():
	}
	// Deadline passed: stop taking new samples, end requests in flight.
	left := 0
	for _, g := range gens {
		for _, l := range g.shards {
			left += l.ring.close()
		}
	}
	e.cancelSend()
	<-done
	if e.disk != nil {
		n := e.disk.queued()
		e.leftOnDisk.Store(int64(n))
		e.log.Warn("stop deadline passed: unsent snapshots stay in the disk buffer for the next start",
			"samples", n, "dir", e.disk.dir)
		e.closeDisk()
		return nil
	}
	if left > 0 {
		e.metrics.dropped[ReasonShutdown].Add(float64(left))
		e.metrics.queueLength.Sub(float64(left))
	}
	if n := left + int(e.shutdownDrops.Load()); n > 0 {
		e.log.Error("dropping samples: stop deadline passed", "samples", n, "queued", left)
		return fmt.Errorf("endpoint %q: %d samples dropped at stop", e.cfg.Name, n)
	}
	return nil
}
