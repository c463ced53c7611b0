package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// Config is the `leader_election` block: with it enabled, every replica
// watches (a warm standby whose series maps stay current) but only the
// holder of a coordination.k8s.io Lease queues snapshots.
type Config struct {
	Enabled   bool   `yaml:"enabled"`
	LeaseName string `yaml:"lease_name,omitempty"`
	// LeaseNamespace empty means env POD_NAMESPACE.
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

// DefaultConfig holds every static default of the block (those of client-go
// and kube-controller-manager). The namespace and identity come from the
// environment in Validate.
var DefaultConfig = Config{
	LeaseName:     "kube-state-push",
	LeaseDuration: 15 * time.Second,
	RenewDeadline: 10 * time.Second,
	RetryPeriod:   2 * time.Second,
}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig
	type plain Config
	return unmarshal((*plain)(c))
}

// Validate checks the block and, when it is enabled, fills in the namespace
// and identity from the environment. Keys are relative to the block.
func (c *Config) Validate() error {
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

// Election runs the leader election on one Lease and tells whether this
// replica leads.
type Election struct {
	// cfg is the validated leader_election block.
	cfg  Config
	lock *resourcelock.LeaseLock
	log  *slog.Logger
	// gauge is kube_state_push_leader.
	gauge prometheus.Gauge

	// mu guards isLeader, so that a late OnStartedLeading cannot undo an
	// OnStoppedLeading.
	mu       sync.Mutex
	isLeader bool
}

// New prepares the election on the Lease cfg names, through kube; Run
// starts it. cfg must be validated.
func New(cfg Config, kube kubernetes.Interface, reg prometheus.Registerer, log *slog.Logger) (*Election, error) {
	e := &Election{
		cfg: cfg,
		lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: cfg.LeaseName, Namespace: cfg.LeaseNamespace},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
		},
		log: log.With("lease", cfg.LeaseNamespace+"/"+cfg.LeaseName, "identity", cfg.Identity),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kube_state_push_leader",
			Help: "1 while this replica holds the leader election Lease and pushes, 0 otherwise.",
		}),
	}
	if err := reg.Register(e.gauge); err != nil {
		return nil, fmt.Errorf("registering leader metric: %w", err)
	}
	// Fail on a bad configuration here, not in Run.
	if _, err := e.elector(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Election) elector() (*leaderelection.LeaderElector, error) {
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          e.lock,
		LeaseDuration: e.cfg.LeaseDuration,
		RenewDeadline: e.cfg.RenewDeadline,
		RetryPeriod:   e.cfg.RetryPeriod,
		// Stepping down hands over at once instead of after lease_duration.
		ReleaseOnCancel: true,
		Name:            e.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { e.set(ctx, true) },
			OnStoppedLeading: func() { e.set(context.Background(), false) },
			OnNewLeader: func(id string) {
				if id != e.cfg.Identity {
					e.log.Info("leader elected", "leader", id)
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
func (e *Election) set(ctx context.Context, leading bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if leading && ctx.Err() != nil {
		return
	}
	if leading != e.isLeader {
		if leading {
			e.log.Info("leading: pushing snapshots")
		} else {
			e.log.Info("not leading: watching only")
		}
	}
	e.isLeader = leading
	if leading {
		e.gauge.Set(1)
	} else {
		e.gauge.Set(0)
	}
}

// Leading reports whether this replica holds the Lease.
func (e *Election) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.isLeader
}

// Run takes part in the election until ctx ends; when leadership is lost it
// rejoins. On ctx's end a held Lease is released (within renew_deadline).
func (e *Election) Run(ctx context.Context) {
	for ctx.Err() == nil {
		le, err := e.elector()
		if err != nil { // checked in New: cannot happen
			panic(err)
		}
		le.Run(ctx)
	}
}
