package queue

import (
	"errors"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/kube-state-push/kube-state-push/internal/confkey"
)

// validateRelabelConfigs checks an endpoint's write_relabel_configs with
// Prometheus' own rules (relabel.Config.Validate), under the legacy label
// name scheme: relabeling may then only write names that every receiver
// accepts. Validate also records the scheme in each rule, which
// relabel.ProcessBuilder needs. Keys in errors are relative to the entry.
func validateRelabelConfigs(cfgs []*relabel.Config) error {
	var errs []error
	for i, rc := range cfgs {
		key := confkey.Index("write_relabel_configs", i)
		if rc == nil {
			errs = append(errs, confkey.Errorf(key, "is empty: give each rule at least an action"))
			continue
		}
		if err := rc.Validate(model.LegacyValidation); err != nil {
			errs = append(errs, confkey.Errorf(key, "%v", err))
		}
	}
	return errors.Join(errs...)
}
