package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// LeaderElectionConfig is the `leader_election` block: with it enabled,
// every replica watches (a warm standby whose series maps stay current) but
// only the holder of a coordination.k8s.io Lease queues snapshots.
type LeaderElectionConfig struct {
	// Enabled turns leader election on.
	Enabled bool `yaml:"enabled"`
	// LeaseName is the name of the Lease.
	LeaseName string `yaml:"lease_name,omitempty"`
	// LeaseNamespace is the Lease's namespace; empty means env POD_NAMESPACE.
	LeaseNamespace string `yaml:"lease_namespace,omitempty"`
	// Identity names this replica in the Lease; empty means env POD_NAME,
	// else the hostname.
	Identity string `yaml:"identity,omitempty"`
	// LeaseDuration is how long followers wait before taking over a Lease
	// that is not renewed.
	LeaseDuration time.Duration `yaml:"lease_duration,omitempty"`
	// RenewDeadline is how long the leader keeps trying to renew before it
	// steps down.
	RenewDeadline time.Duration `yaml:"renew_deadline,omitempty"`
	// RetryPeriod is how often acquiring and renewing are tried.
	RetryPeriod time.Duration `yaml:"retry_period,omitempty"`
}

// DefaultLeaderElectionConfig holds every static default of the block (those
// of client-go and kube-controller-manager). The namespace and identity come
// from the environment in Validate.
var DefaultLeaderElectionConfig = LeaderElectionConfig{
	LeaseName:     "kube-state-push",
	LeaseDuration: 15 * time.Second,
	RenewDeadline: 10 * time.Second,
	RetryPeriod:   2 * time.Second,
}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (c *LeaderElectionConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultLeaderElectionConfig
	type plain LeaderElectionConfig
	return unmarshal((*plain)(c))
}

// Validate checks the block and, when it is enabled, fills in the namespace
// and identity from the environment. Keys are relative to the block.
func (c *LeaderElectionConfig) Validate() error {
	var errs []error
	if c.Enabled {
		if c.LeaseNamespace == "" {
			c.LeaseNamespace = os.Getenv("POD_NAMESPACE")
		}
		if c.Identity == "" {
			c.Identity = os.Getenv("POD_NAME")
		}
		if c.Identity == "" {
			h, err := os.Hostname()
			if err != nil {
				errs = append(errs, confkey.Errorf("identity", "not set, and no hostname: %w", err))
			}
			c.Identity = h
		}
		if c.LeaseNamespace == "" {
			errs = append(errs, confkey.Errorf("lease_namespace", "required when enabled (or set env POD_NAMESPACE)"))
		}
	}
	if msgs := validation.IsDNS1123Subdomain(c.LeaseName); len(msgs) > 0 {
		errs = append(errs, confkey.Errorf("lease_name", "%q is not a valid Lease name: %s", c.LeaseName, strings.Join(msgs, "; ")))
	}
	if c.LeaseNamespace != "" {
		if msgs := validation.IsDNS1123Label(c.LeaseNamespace); len(msgs) > 0 {
			errs = append(errs, confkey.Errorf("lease_namespace", "%q is not a valid namespace: %s", c.LeaseNamespace, strings.Join(msgs, "; ")))
		}
	}
	// client-go's own rules (leaderelection.NewLeaderElector), checked here
	// so that the error names the key.
	switch {
	case c.RetryPeriod <= 0:
		errs = append(errs, confkey.Errorf("retry_period", "must be positive, not %s", c.RetryPeriod))
	case c.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(c.RetryPeriod)):
		errs = append(errs, confkey.Errorf("renew_deadline", "%s must be more than %g × retry_period %s", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod))
	case c.LeaseDuration <= c.RenewDeadline:
		errs = append(errs, confkey.Errorf("lease_duration", "%s must be more than renew_deadline %s", c.LeaseDuration, c.RenewDeadline))
	}
	return errors.Join(errs...)
}

// leader runs the election and tells whether this replica leads.
type leader struct {
	// cfg is the validated leader_election block.
	cfg LeaderElectionConfig
	// lock is the Lease, reached through the agent's Kubernetes client.
	lock *resourcelock.LeaseLock
	// log receives transitions.
	log *slog.Logger
	// gauge is kube_state_push_leader.
	gauge prometheus.Gauge

	// mu guards isLeader, so that a late OnStartedLeading cannot undo an
	// OnStoppedLeading.
	mu       sync.Mutex
	isLeader bool
}

// newLeader prepares the election on the Lease cfg names; run starts it.
func newLeader(cfg LeaderElectionConfig, kube kubernetes.Interface, reg prometheus.Registerer, log *slog.Logger) (*leader, error) {
	l := &leader{
		cfg: cfg,
		lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: cfg.LeaseName, Namespace: cfg.LeaseNamespace},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
		},
		log: log.With("lease", cfg.LeaseNamespace+"/"+cfg.LeaseName, "identity", cfg.Identity),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace,
			Name:      "leader",
			Help:      "1 while this replica holds the leader election Lease and pushes, 0 otherwise.",
		}),
	}
	if err := reg.Register(l.gauge); err != nil {
		return nil, fmt.Errorf("registering leader metric: %w", err)
	}
	// Fail on a bad configuration here, not in run.
	if _, err := l.elector(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *leader) elector() (*leaderelection.LeaderElector, error) {
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          l.lock,
		LeaseDuration: l.cfg.LeaseDuration,
		RenewDeadline: l.cfg.RenewDeadline,
		RetryPeriod:   l.cfg.RetryPeriod,
		// Stepping down hands over at once instead of after lease_duration.
		ReleaseOnCancel: true,
		Name:            l.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { l.set(ctx, true) },
			OnStoppedLeading: func() { l.set(nil, false) },
			OnNewLeader: func(id string) {
				if id != l.cfg.Identity {
					l.log.Info("leader elected", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("leader_election: %w", err)
	}
	return le, nil
}

// set records a transition. OnStartedLeading runs in its own goroutine, so
// it counts only while its leadership context is alive: client-go cancels
// that context before it calls OnStoppedLeading.
func (l *leader) set(ctx context.Context, leading bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if leading && ctx.Err() != nil {
		return
	}
	if leading != l.isLeader {
		if leading {
			l.log.Info("leading: pushing snapshots")
		} else {
			l.log.Info("not leading: watching only")
		}
	}
	l.isLeader = leading
	l.gauge.Set(boolGauge(leading))
}

// leading reports whether this replica holds the Lease.
func (l *leader) leading() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.isLeader
}

// run takes part in the election until ctx ends; when leadership is lost it
// rejoins. On ctx's end a held Lease is released (within renew_deadline).
func (l *leader) run(ctx context.Context) {
	for ctx.Err() == nil {
		le, err := l.elector()
		if err != nil { // checked in newLeader: cannot happen
			panic(err)
		}
		le.Run(ctx)
	}
}

// gate lets only the leader's snapshots reach the endpoints. The agent opens
// or closes it between ticks (openGate), so a snapshot is sent whole or not
// at all; while it is closed the snapshotter holds its snapshots back
// (snapshotter.hold).
type gate struct {
	// open is set between ticks and read during them.
	open atomic.Bool
}

// elect starts the leader election, if enabled, with a context of its own:
// the Lease is released only once stop is called, after the final snapshot
// is queued, so that the next leader's first snapshot follows it. stop
// waits for the release within ctx.
func (a *Agent) elect(ctx context.Context) (stop func(context.Context)) {
	if a.leader == nil {
		return func(context.Context) {}
	}
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.leader.run(ectx)
	}()
	return func(ctx context.Context) {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			a.log.Warn("leader election did not stop in time", "err", ctx.Err())
		}
	}
}

// openGate lets the coming snapshot through if this replica leads. Followers
// still take snapshots, unsent: that keeps their series counts current, and
// their series maps keep what ended (for staleness markers once they lead).
func (a *Agent) openGate() {
	if a.gate != nil {
		a.gate.open.Store(a.leader.leading())
	}
}
