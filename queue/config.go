package queue

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
	"github.com/kube-state-push/kube-state-push/internal/redact"
)

// Config is one remote_write endpoint, shaped like Prometheus' own
// remote_write block so that one pastes in unchanged.
type Config struct {
	// URL is the endpoint's write URL.
	URL string `yaml:"url"`
	// Name identifies the endpoint in logs and self-metrics; default: the
	// URL's host.
	Name string `yaml:"name,omitempty"`
	// Headers are added to every request; they may not override the
	// Remote-Write protocol headers. Their values are masked in every
	// output but for those named in NonSecretHeaders.
	Headers map[string]string `yaml:"headers,omitempty"`
	// NonSecretHeaders names the headers whose values check-config shows:
	// tenant IDs, which identify and do not authenticate. Not a Prometheus
	// key.
	NonSecretHeaders []string `yaml:"non_secret_headers"`
	// RemoteTimeout bounds one HTTP request.
	RemoteTimeout time.Duration `yaml:"remote_timeout,omitempty"`
	// HTTPClientConfig holds authentication (basic_auth, authorization,
	// oauth2), tls_config and proxy settings, as Prometheus reads them.
	HTTPClientConfig config.HTTPClientConfig `yaml:",inline"`
	// SigV4Config signs requests for Amazon Managed Service for Prometheus
	// (managed.go). The managed receivers' keys use Prometheus' own
	// libraries; at most one of them, basic_auth, authorization and oauth2
	// may be set.
	SigV4Config *SigV4Config `yaml:"sigv4,omitempty"`
	// AzureADConfig gets Entra ID tokens for Azure Monitor (managed.go).
	AzureADConfig *AzureADConfig `yaml:"azuread,omitempty"`
	// GoogleIAMConfig gets Google OAuth 2.0 tokens for Google Cloud
	// Managed Service for Prometheus (managed.go).
	GoogleIAMConfig *GoogleIAMConfig `yaml:"google_iam,omitempty"`
	// QueueConfig tunes sharding, batching and retries.
	QueueConfig QueueConfig `yaml:"queue_config,omitempty"`
	// DiskBuffer keeps pending snapshots on disk (diskbufconfig.go); no
	// directory keeps them in memory only.
	DiskBuffer DiskBufferConfig `yaml:"disk_buffer,omitempty"`
	// WriteRelabelConfigs relabel every series sent to this endpoint, after
	// the external labels are added, as Prometheus' write_relabel_configs
	// do; label names are checked with the legacy scheme
	// ([a-zA-Z_][a-zA-Z0-9_]*), which every receiver accepts.
	WriteRelabelConfigs []*relabel.Config `yaml:"write_relabel_configs,omitempty"`
	// SeriesLimits are limits the receiver enforces on each series
	// (limits.go): a series past one is dropped, or its long values
	// truncated, before it is sent, counted. Not a Prometheus key.
	SeriesLimits SeriesLimits `yaml:"series_limits,omitempty"`
	// ProtobufMessage picks the Remote-Write version: ProtoV1
	// ("prometheus.WriteRequest", 1.0, the default) or ProtoV2
	// ("io.prometheus.write.v2.Request", 2.0), the names Prometheus'
	// remote_write uses. A 2.0 endpoint that turns out to speak only 1.0
	// (415, or a 2xx without the Samples-Written header) falls back to 1.0.
	ProtobufMessage string `yaml:"protobuf_message,omitempty"`
	// Protocol picks the wire protocol (protocol.go): ProtocolPrometheus,
	// the default, sends Remote-Write as protobuf_message says;
	// ProtocolVictoriaMetrics sends VictoriaMetrics' own protocol (the 1.0
	// request, zstd) always; ProtocolAuto asks the receiver as vmagent did
	// and sends the fewest bytes it accepts. Not a Prometheus key.
	Protocol string `yaml:"protocol,omitempty"`
	// MetadataConfig schedules the 1.0 metadata requests (2.0 carries
	// metadata in every series).
	MetadataConfig MetadataConfig `yaml:"metadata_config,omitempty"`
	// RoundRobinDNS dials each new connection to an address of the URL's
	// host picked at random among its A/AAAA records, as Prometheus' key of
	// the name does (dial.go); off, Go tries the addresses in turn.
	RoundRobinDNS bool `yaml:"round_robin_dns,omitempty"`
	// FailedRequestLogging logs every failed try of a Remote-Write 2.0
	// request at debug level, with the request's series and samples and the
	// error, as Prometheus' key of the name does (failedlog.go); 1.0
	// requests are not logged, as in Prometheus.
	FailedRequestLogging bool `yaml:"failed_request_logging,omitempty"`
	// SendExemplars, SendNativeHistograms and ConvertNHCBToClassic are
	// Prometheus' keys of the name, accepted so that a remote_write block
	// pastes in, and ignored: state series are plain floats, with no
	// exemplars and no histograms to send or convert.
	SendExemplars        bool `yaml:"send_exemplars,omitempty"`
	SendNativeHistograms bool `yaml:"send_native_histograms,omitempty"`
	ConvertNHCBToClassic bool `yaml:"convert_nhcb_to_classic,omitempty"`
	// Backfill is the order in which a backlog (snapshots held while the
	// receiver was down) is sent: BackfillOldestFirst, the default, keeps
	// every series in order, as receivers without an out-of-order window
	// need; BackfillNewestFirst sends each new snapshot ahead of the
	// backlog, so that the current state reaches the receiver within an
	// interval of its recovery, for receivers that accept out-of-order
	// samples (VictoriaMetrics; Prometheus and Mimir with an out-of-order
	// window). Not a Prometheus key.
	Backfill string `yaml:"backfill,omitempty"`
	// BackfillResolution thins a disk buffer's backlog as it is replayed
	// (thin.go): frames older than BackfillFullResolutionWithin go at
	// about one per step of it, plus every change of each series. 0, the
	// default, replays in full. Not a Prometheus key.
	BackfillResolution time.Duration `yaml:"backfill_resolution,omitempty"`
	// BackfillFullResolutionWithin is the age under which a backlog's
	// frames are replayed in full; 0 means BackfillResolution.
	BackfillFullResolutionWithin time.Duration `yaml:"backfill_full_resolution_within,omitempty"`
	// BackfillLookbackDelta is how far back the receiver's instant
	// queries look for a sample (Prometheus' --query.lookback-delta,
	// VictoriaMetrics' instant query step): BackfillResolution may not
	// exceed it, or queries between the samples kept would miss series.
	BackfillLookbackDelta time.Duration `yaml:"backfill_lookback_delta,omitempty"`
}

// DefaultBackfillLookbackDelta is the lookback of Prometheus' and
// VictoriaMetrics' instant queries by default.
const DefaultBackfillLookbackDelta = 5 * time.Minute

// The values of backfill.
const (
	// BackfillOldestFirst sends a backlog in order.
	BackfillOldestFirst = "oldest_first"
	// BackfillNewestFirst sends new snapshots ahead of a backlog.
	BackfillNewestFirst = "newest_first"
)

// The values of protobuf_message.
const (
	// ProtoV1 is Remote-Write 1.0.
	ProtoV1 = "prometheus.WriteRequest"
	// ProtoV2 is Remote-Write 2.0.
	ProtoV2 = "io.prometheus.write.v2.Request"
)

// The values of protocol.
const (
	// ProtocolPrometheus is Prometheus Remote-Write, version by
	// protobuf_message.
	ProtocolPrometheus = "prometheus"
	// ProtocolVictoriaMetrics is VictoriaMetrics' remote write protocol.
	ProtocolVictoriaMetrics = "victoriametrics"
	// ProtocolAuto is VictoriaMetrics' protocol where the receiver says it
	// speaks it, else Remote-Write 2.0, falling back to 1.0.
	ProtocolAuto = "auto"
)

// MetadataConfig schedules the metadata (HELP, TYPE) a 1.0 endpoint gets in
// requests of their own, as Prometheus sends them. The names and defaults are
// Prometheus' own.
type MetadataConfig struct {
	// Send turns metadata requests on. No omitempty: an effective config must
	// keep an explicit false.
	Send bool `yaml:"send"`
	// SendInterval is how often every family's metadata is sent.
	SendInterval time.Duration `yaml:"send_interval,omitempty"`
	// MaxSamplesPerSend is the most metadata entries in one request.
	MaxSamplesPerSend int `yaml:"max_samples_per_send,omitempty"`
}

// DefaultMetadataConfig holds Prometheus' metadata defaults.
var DefaultMetadataConfig = MetadataConfig{Send: true, SendInterval: time.Minute, MaxSamplesPerSend: 2000}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (m *MetadataConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*m = DefaultMetadataConfig
	type plain MetadataConfig
	return unmarshal((*plain)(m))
}

// QueueConfig tunes an endpoint's shards, batches and retries. The names are
// Prometheus' own, and so are the defaults but for two (DefaultQueueConfig).
type QueueConfig struct {
	// Capacity is how many samples each shard buffers before the feed waits for room.
	Capacity int `yaml:"capacity,omitempty"`
	// MinShards is the number of shards at start.
	MinShards int `yaml:"min_shards,omitempty"`
	// MaxShards is the most shards the endpoint may use.
	MaxShards int `yaml:"max_shards,omitempty"`
	// MaxSamplesPerSend is the largest batch in one request.
	MaxSamplesPerSend int `yaml:"max_samples_per_send,omitempty"`
	// MaxBytesPerSend caps a request's uncompressed WriteRequest: a batch
	// is closed before it passes it, and a series larger alone is dropped
	// (series_too_large). Not a Prometheus key.
	MaxBytesPerSend int `yaml:"max_bytes_per_send,omitempty"`
	// BatchSendDeadline is how long a shard waits to fill a batch.
	BatchSendDeadline time.Duration `yaml:"batch_send_deadline,omitempty"`
	// MinBackoff is the first retry delay; it doubles up to MaxBackoff.
	MinBackoff time.Duration `yaml:"min_backoff,omitempty"`
	// MaxBackoff caps the retry delay.
	MaxBackoff time.Duration `yaml:"max_backoff,omitempty"`
	// RetryOnHTTP429 retries requests answered 429 Too Many Requests,
	// honouring Retry-After; otherwise they are dropped and counted. On by
	// default, as in Grafana Alloy (Prometheus defaults to off). No
	// omitempty: an effective config must keep an explicit false.
	RetryOnHTTP429 bool `yaml:"retry_on_http_429"`
	// MaxRetryDuration bounds the time spent retrying one request after a
	// recoverable error (network, 5xx, retried 429); then its samples are
	// dropped as retries_ended (with a disk buffer: kept and tried again).
	// 0, the default, retries until Stop, as Prometheus does: a memory-only shard
	// then holds back the feed once full rather than drop what it holds. Not a
	// Prometheus key.
	MaxRetryDuration time.Duration `yaml:"max_retry_duration"`
	// SampleAgeLimit drops samples older than it (by their timestamp)
	// before each send, and ends the retries of a batch when its oldest
	// sample passes it, as Prometheus' key of the name does; they are
	// counted as too_old. 0, the default, sends samples of any age.
	SampleAgeLimit time.Duration `yaml:"sample_age_limit,omitempty"`
}

// DefaultQueueConfig holds Prometheus' remote-write queue defaults, but for
// retry_on_http_429 (on, as in Grafana Alloy) and max_samples_per_send:
// 10,000 (vmagent's -remoteWrite.maxRowsPerBlock) where Prometheus sends
// 2,000. A snapshot reaches the queue whole, every interval, where a
// Prometheus scrape trickles in; at the bench cluster's 615k samples an
// interval that is 62 requests instead of 308, and about a sixth of the agent's
// CPU in the window went with the others (docs/performance.md). A receiver
// that refuses so large a request with 413 gets it split in halves
// (deliver.go). capacity stays Prometheus' 10,000, which still holds a
// whole batch.
var DefaultQueueConfig = QueueConfig{
	Capacity:          10000,
	MinShards:         1,
	MaxShards:         50,
	MaxSamplesPerSend: 10000,
	MaxBytesPerSend:   DefaultMaxBytesPerSend,
	BatchSendDeadline: 5 * time.Second,
	MinBackoff:        30 * time.Millisecond,
	MaxBackoff:        5 * time.Second,
	RetryOnHTTP429:    true,
	MaxRetryDuration:  0, // no limit, as Prometheus
	SampleAgeLimit:    0, // off, as Prometheus
}

// DefaultMaxBytesPerSend is a quarter of the 32 MiB a request may decode
// to in Prometheus (since 3.5.3) and VictoriaMetrics: a margin for a
// receiver that adds labels or counts with a framing of its own. A batch
// of max_samples_per_send typical series is well under it, so it closes
// only batches of unusually large series.
const DefaultMaxBytesPerSend = 8 << 20

// DefaultHTTPClientConfig is Prometheus' remote-write HTTP client default
// (config.DefaultRemoteWriteHTTPClientConfig): redirects followed, HTTP/2
// off, where prometheus/common's config.DefaultHTTPClientConfig turns it on.
// enable_http2: true turns it on.
var DefaultHTTPClientConfig = config.HTTPClientConfig{
	FollowRedirects: true,
	EnableHTTP2:     false,
}

// DefaultNonSecretHeaders are the tenant headers of Mimir, Cortex and Loki
// (X-Scope-OrgID) and of Thanos Receive (THANOS-TENANT). A tenant ID names
// where samples go; the receiver or the gateway in front of it
// authenticates with a credential of its own (basic_auth, a bearer token),
// and the receivers show tenant IDs in their own metrics and logs.
var DefaultNonSecretHeaders = []string{"X-Scope-OrgID", "THANOS-TENANT"}

// DefaultConfig holds the defaults of one remote_write entry.
var DefaultConfig = Config{
	NonSecretHeaders: DefaultNonSecretHeaders,
	RemoteTimeout:    30 * time.Second,
	HTTPClientConfig: DefaultHTTPClientConfig,
	QueueConfig:      DefaultQueueConfig,
	DiskBuffer:       DefaultDiskBufferConfig,
	ProtobufMessage:  ProtoV1,
	Protocol:         ProtocolPrometheus,
	MetadataConfig:   DefaultMetadataConfig,
	Backfill:         BackfillOldestFirst,

	BackfillLookbackDelta: DefaultBackfillLookbackDelta,
}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	*c = DefaultConfig
	c.HTTPClientConfig = DefaultHTTPClientConfig
	type plain Config
	return unmarshal((*plain)(c))
}

// MarshalYAML writes the endpoint with its credentials masked, for
// check-config: the URL's password and query values, the values of headers
// not named in non_secret_headers, and OAuth 2.0's token_url and
// endpoint_params values. prometheus/common's Secret fields mask
// themselves.
func (c Config) MarshalYAML() (any, error) {
	type plain Config
	p := plain(c)
	p.URL = redact.URL(c.URL)
	p.Headers = redact.Headers(c.Headers, c.NonSecretHeaders)
	h := &p.HTTPClientConfig
	h.ProxyURL = maskProxyURL(h.ProxyURL)
	if o := h.OAuth2; o != nil {
		m := *o
		m.TokenURL = redact.URL(o.TokenURL)
		m.EndpointParams = redact.Values(o.EndpointParams)
		m.ProxyURL = maskProxyURL(o.ProxyURL)
		h.OAuth2 = &m
	}
	return p, nil
}

// maskProxyURL masks a proxy URL's query values too: prometheus/common masks
// only its password.
func maskProxyURL(u config.URL) config.URL {
	return config.URL{URL: redact.Parsed(u.URL)}
}

// UnmarshalYAML starts from the defaults, so that keys left out keep them.
func (q *QueueConfig) UnmarshalYAML(unmarshal func(any) error) error {
	*q = DefaultQueueConfig
	type plain QueueConfig
	return unmarshal((*plain)(q))
}

// protocolHeaders are set by the sender and may not be configured.
var protocolHeaders = []string{
	"Content-Encoding", "Content-Type", "X-Prometheus-Remote-Write-Version", "User-Agent", "Retry-Attempt",
	"X-VictoriaMetrics-Remote-Write-Version",
}

// Validate checks the endpoint and fills in its name. Keys in errors are
// relative to the entry.
func (c *Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		errs = append(errs, confkey.Errorf("url", "is required"))
	case err != nil:
		// The URL is never quoted: it may hold a password or a token.
		errs = append(errs, confkey.Errorf("url", "is not a valid URL (%s)", redact.ParseError(err)))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, confkey.Errorf("url", "scheme must be http or https, not %q", u.Scheme))
	case u.Host == "":
		errs = append(errs, confkey.Errorf("url", "has no host"))
	default:
		if c.Name == "" {
			c.Name = u.Host
		}
	}
	for h := range c.Headers {
		key := "headers." + h // names the header's own line
		for _, p := range protocolHeaders {
			if strings.EqualFold(h, p) {
				errs = append(errs, confkey.Errorf(key, "%q is set by the Remote-Write protocol and cannot be configured", h))
			}
		}
		if strings.EqualFold(h, "Authorization") {
			errs = append(errs, confkey.Errorf(key, "use basic_auth, authorization, oauth2, sigv4, azuread or google_iam instead of an Authorization header"))
		}
		if http.CanonicalHeaderKey(h) == "" || strings.ContainsAny(h, " :\r\n") {
			errs = append(errs, confkey.Errorf(key, "%q is not a valid header name", h))
		}
	}
	if c.RemoteTimeout <= 0 {
		errs = append(errs, confkey.Errorf("remote_timeout", "must be positive, not %s", c.RemoteTimeout))
	}
	if o := c.HTTPClientConfig.OAuth2; o != nil && o.TokenURL != "" {
		// Read only when a token is fetched: a bad one would fail every
		// request, with an error quoting the part that does not parse.
		if _, err := url.Parse(o.TokenURL); err != nil {
			errs = append(errs, confkey.Errorf("oauth2.token_url", "is not a valid URL (%s)", redact.ParseError(err)))
		}
	}
	if err := c.HTTPClientConfig.Validate(); err != nil {
		errs = append(errs, &confkey.Error{Key: "", Err: err})
	}
	errs = append(errs, c.validateAuth()...)
	if err := c.QueueConfig.Validate(); err != nil {
		errs = append(errs, confkey.Under("queue_config", err))
	}
	if err := c.DiskBuffer.Validate(); err != nil {
		errs = append(errs, confkey.Under("disk_buffer", err))
	}
	switch c.ProtobufMessage {
	case ProtoV1, ProtoV2:
	default:
		errs = append(errs, confkey.Errorf("protobuf_message", "must be %q or %q, not %q", ProtoV1, ProtoV2, c.ProtobufMessage))
	}
	switch c.Protocol {
	case ProtocolPrometheus, ProtocolAuto:
	case ProtocolVictoriaMetrics:
		if c.ProtobufMessage == ProtoV2 {
			errs = append(errs, confkey.Errorf("protobuf_message", "must be %q with protocol %q, which sends the 1.0 request", ProtoV1, ProtocolVictoriaMetrics))
		}
	default:
		errs = append(errs, confkey.Errorf("protocol", "must be %q, %q or %q, not %q", ProtocolPrometheus, ProtocolVictoriaMetrics, ProtocolAuto, c.Protocol))
	}
	switch c.Backfill {
	case BackfillOldestFirst, BackfillNewestFirst:
	default:
		errs = append(errs, confkey.Errorf("backfill", "must be %q or %q, not %q", BackfillOldestFirst, BackfillNewestFirst, c.Backfill))
	}
	errs = append(errs, c.validateBackfill()...)
	if m := c.MetadataConfig; m.Send {
		if m.SendInterval <= 0 {
			errs = append(errs, confkey.Errorf("metadata_config.send_interval", "must be positive, not %s", m.SendInterval))
		}
		if m.MaxSamplesPerSend <= 0 {
			errs = append(errs, confkey.Errorf("metadata_config.max_samples_per_send", "must be at least 1, not %d", m.MaxSamplesPerSend))
		}
	}
	if err := validateRelabelConfigs(c.WriteRelabelConfigs); err != nil {
		errs = append(errs, err)
	}
	if err := c.SeriesLimits.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateBackfill checks the backfill_* keys of thinning.
func (c *Config) validateBackfill() []error {
	var errs []error
	if c.BackfillResolution < 0 {
		errs = append(errs, confkey.Errorf("backfill_resolution", "must not be negative (0 means off), not %s", c.BackfillResolution))
	}
	if c.BackfillFullResolutionWithin < 0 {
		errs = append(errs, confkey.Errorf("backfill_full_resolution_within", "must not be negative (0 means backfill_resolution), not %s", c.BackfillFullResolutionWithin))
	}
	if c.BackfillLookbackDelta <= 0 {
		errs = append(errs, confkey.Errorf("backfill_lookback_delta", "must be positive, not %s", c.BackfillLookbackDelta))
	}
	if c.BackfillResolution <= 0 {
		return errs
	}
	if !c.DiskBuffer.Enabled() {
		errs = append(errs, confkey.Errorf("backfill_resolution", "thins the disk buffer's backlog: set disk_buffer.directory too"))
	}
	if c.BackfillLookbackDelta > 0 && c.BackfillResolution > c.BackfillLookbackDelta {
		errs = append(errs, confkey.Errorf("backfill_resolution", "%s is more than backfill_lookback_delta %s: instant queries between the samples kept would miss series; raise backfill_lookback_delta only if the receiver's queries look back that far",
			c.BackfillResolution, c.BackfillLookbackDelta))
	}
	return errs
}

// minBytesPerSend is the smallest max_bytes_per_send: less would drop
// ordinary series as too large.
const minBytesPerSend = 1024

// Validate checks the queue settings. Keys in errors are relative to
// queue_config.
func (q *QueueConfig) Validate() error {
	var errs []error
	positive := func(key string, v int) {
		if v <= 0 {
			errs = append(errs, confkey.Errorf(key, "must be at least 1, not %d", v))
		}
	}
	positive("capacity", q.Capacity)
	positive("min_shards", q.MinShards)
	positive("max_shards", q.MaxShards)
	positive("max_samples_per_send", q.MaxSamplesPerSend)
	if q.MaxBytesPerSend < minBytesPerSend {
		errs = append(errs, confkey.Errorf("max_bytes_per_send", "must be at least %d, not %d", minBytesPerSend, q.MaxBytesPerSend))
	}
	if q.MaxShards > 0 && q.MinShards > q.MaxShards {
		errs = append(errs, confkey.Errorf("min_shards", "%d is more than max_shards %d", q.MinShards, q.MaxShards))
	}
	if q.MaxSamplesPerSend > 0 && q.Capacity > 0 && q.Capacity < q.MaxSamplesPerSend {
		errs = append(errs, confkey.Errorf("capacity", "%d is less than max_samples_per_send %d", q.Capacity, q.MaxSamplesPerSend))
	}
	if q.BatchSendDeadline <= 0 {
		errs = append(errs, confkey.Errorf("batch_send_deadline", "must be positive, not %s", q.BatchSendDeadline))
	}
	if q.MinBackoff <= 0 {
		errs = append(errs, confkey.Errorf("min_backoff", "must be positive, not %s", q.MinBackoff))
	}
	if q.MaxBackoff < q.MinBackoff {
		errs = append(errs, confkey.Errorf("max_backoff", "%s is less than min_backoff %s", q.MaxBackoff, q.MinBackoff))
	}
	if q.MaxRetryDuration < 0 {
		errs = append(errs, confkey.Errorf("max_retry_duration", "must not be negative (0 means no limit), not %s", q.MaxRetryDuration))
	}
	if q.SampleAgeLimit < 0 {
		errs = append(errs, confkey.Errorf("sample_age_limit", "must not be negative (0 means off), not %s", q.SampleAgeLimit))
	}
	return errors.Join(errs...)
}
