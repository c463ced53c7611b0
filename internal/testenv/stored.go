package testenv

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Each receiver's own count of the samples it stored, read from its
// /metrics: what a test compares with what the agent says it sent.

// StoredSamples is the number of samples VictoriaMetrics inserted from
// Prometheus remote write requests (either compression).
func (v *VictoriaMetrics) StoredSamples(ctx context.Context) (float64, error) {
	return CounterSum(ctx, v.URL+"/metrics", "vm_rows_inserted_total", map[string]string{"type": "promremotewrite"})
}

// StoredSamples is the number of float samples appended to Prometheus'
// head.
func (p *Prometheus) StoredSamples(ctx context.Context) (float64, error) {
	return CounterSum(ctx, p.URL+"/metrics", "prometheus_tsdb_head_samples_appended_total", map[string]string{"type": "float"})
}

// StoredSamples is the number of float samples appended to the heads of
// every tenant of the receive.
func (th *Thanos) StoredSamples(ctx context.Context) (float64, error) {
	return CounterSum(ctx, th.MetricsURL, "prometheus_tsdb_head_samples_appended_total", map[string]string{"type": "float"})
}

// StoredSamples is the number of samples Mimir's ingester ingested, every
// tenant together.
func (m *Mimir) StoredSamples(ctx context.Context) (float64, error) {
	return CounterSum(ctx, m.URL+"/metrics", "cortex_ingester_ingested_samples_total", nil)
}

// CounterSum scrapes url and sums the samples of the family name whose
// labels include match.
func CounterSum(ctx context.Context, url, name string, match map[string]string) (float64, error) {
	s, err := ScrapeWith(ctx, url, map[string]string{"Accept": "text/plain"})
	if err != nil {
		return 0, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(s.Body))
	if err != nil {
		return 0, fmt.Errorf("parsing %s: %w", url, err)
	}
	f, ok := fams[name]
	if !ok {
		return 0, nil // nothing counted yet
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		labels := model.LabelSet{}
		for _, l := range m.GetLabel() {
			labels[model.LabelName(l.GetName())] = model.LabelValue(l.GetValue())
		}
		matches := true
		for k, v := range match {
			if string(labels[model.LabelName(k)]) != v {
				matches = false
			}
		}
		if !matches {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetUntyped() != nil:
			sum += m.GetUntyped().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum, nil
}
