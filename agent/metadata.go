package agent

import (
	"github.com/kube-state-push/kube-state-push/config"
	"github.com/kube-state-push/kube-state-push/encode"
	"github.com/kube-state-push/kube-state-push/watch"
)

// familyMetadata returns the type and help of every family the configuration
// selects, by metric name, for the endpoints to send: inline with 2.0, in
// metadata requests with 1.0. HELP carries kube-state-metrics' "[STABLE] "
// prefix on stable families, as its /metrics page does, so a receiver holds
// the same metadata as one fed by a Prometheus that scraped it.
func familyMetadata(cfg *config.Config) map[string]encode.Metadata {
	md := map[string]encode.Metadata{}
	for _, name := range cfg.Watch.Resources {
		r, ok := watch.Lookup(name)
		if !ok {
			continue // New reports unknown resources
		}
		for _, f := range r.Families(cfg.Watch.FamilyOptions(name)) {
			if !cfg.Watch.Selected(f) {
				continue
			}
			md[f.Name] = encode.Metadata{Type: metadataType(f.Type), Help: f.HelpText()}
		}
	}
	if cfg.CustomResourceState != nil {
		// Known from the document, whether or not a CRD serves the kind.
		for _, f := range cfg.CustomResourceState.Families() {
			if cfg.Watch.Selected(f) {
				md[f.Name] = encode.Metadata{Type: metadataType(f.Type), Help: f.HelpText()}
			}
		}
	}
	return md
}

// metadataType maps a family's type to the encoder's.
func metadataType(t watch.MetricType) encode.MetricType {
	switch t {
	case watch.Counter:
		return encode.TypeCounter
	case watch.Info:
		return encode.TypeInfo
	case watch.StateSet:
		return encode.TypeStateSet
	default:
		return encode.TypeGauge
	}
}
