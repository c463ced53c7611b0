package queue

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/kube-state-push/kube-state-push/encode"
)

// Reasons a series is dropped before it is sent, for a limit of its
// endpoint's series_limits.
const (
	// ReasonTooManyLabels is a series with more labels than
	// max_label_names_per_series.
	ReasonTooManyLabels = "too_many_labels"
	// ReasonLabelTooLong is a series with a label name longer than
	// max_label_name_length, or a label value (or metric name) longer than
	// max_label_value_length while the action is drop.
	ReasonLabelTooLong = "label_too_long"
)

// The values of series_limits.action.
const (
	// LimitActionDrop drops a series past a limit.
	LimitActionDrop = "drop"
	// LimitActionTruncate cuts a label value past max_label_value_length
	// (and still drops a series past the other limits).
	LimitActionTruncate = "truncate"
)

// SeriesLimits are limits a receiver enforces on each series, set so that
// the agent drops or truncates a series before sending it rather than have
// the receiver refuse it. 0 is no limit; all are off by default. Mimir's
// defaults are 30 label names, 1,024-byte names and 2,048-byte values.
type SeriesLimits struct {
	// MaxLabelNamesPerSeries is the most labels a series may have, its
	// metric name included.
	MaxLabelNamesPerSeries int `yaml:"max_label_names_per_series,omitempty"`
	// MaxLabelNameLength is the longest label name, in bytes.
	MaxLabelNameLength int `yaml:"max_label_name_length,omitempty"`
	// MaxLabelValueLength is the longest label value, in bytes; it applies
	// to the metric name too, as in Mimir.
	MaxLabelValueLength int `yaml:"max_label_value_length,omitempty"`
	// Action is what happens to a label value past MaxLabelValueLength:
	// LimitActionDrop (the default) or LimitActionTruncate. A series past
	// another limit, or whose metric name is too long, is always dropped.
	Action string `yaml:"action,omitempty"`
}

// enabled reports whether any limit is set.
func (l *SeriesLimits) enabled() bool {
	return l.MaxLabelNamesPerSeries > 0 || l.MaxLabelNameLength > 0 || l.MaxLabelValueLength > 0
}

// truncatedSuffixLen is the length of what ends a truncated value: "~" and
// 16 hex digits of the hash of the whole value, so that two long values
// that share a prefix stay two series.
const truncatedSuffixLen = 17

// Validate checks the limits; messages name the keys under series_limits.
func (l *SeriesLimits) Validate() error {
	var errs []error
	for _, k := range []struct {
		key string
		v   int
	}{
		{"max_label_names_per_series", l.MaxLabelNamesPerSeries},
		{"max_label_name_length", l.MaxLabelNameLength},
		{"max_label_value_length", l.MaxLabelValueLength},
	} {
		if k.v < 0 {
			errs = append(errs, fmt.Errorf("series_limits.%s: must not be negative (0 means no limit), not %d", k.key, k.v))
		}
	}
	switch l.Action {
	case "", LimitActionDrop:
	case LimitActionTruncate:
		if l.MaxLabelValueLength > 0 && l.MaxLabelValueLength <= truncatedSuffixLen {
			errs = append(errs, fmt.Errorf("series_limits.max_label_value_length: must be more than %d to truncate, not %d",
				truncatedSuffixLen, l.MaxLabelValueLength))
		}
	default:
		errs = append(errs, fmt.Errorf("series_limits.action: must be %q or %q, not %q", LimitActionDrop, LimitActionTruncate, l.Action))
	}
	return errors.Join(errs...)
}

// apply enforces the limits on a series' labels in lb. It returns the drop
// reason for a series past a limit, or "" with truncated set when it cut a
// value to fit.
func (l *SeriesLimits) apply(lb *labels.Builder) (reason string, truncated bool) {
	n := 0
	lb.Range(func(lbl labels.Label) {
		n++
		switch {
		case reason != "":
		case l.MaxLabelNameLength > 0 && len(lbl.Name) > l.MaxLabelNameLength:
			reason = ReasonLabelTooLong
		case l.MaxLabelValueLength > 0 && len(lbl.Value) > l.MaxLabelValueLength:
			if l.Action != LimitActionTruncate || lbl.Name == encode.MetricName {
				reason = ReasonLabelTooLong
				return
			}
			truncated = true
		}
	})
	if reason == "" && l.MaxLabelNamesPerSeries > 0 && n > l.MaxLabelNamesPerSeries {
		reason = ReasonTooManyLabels
	}
	if reason != "" || !truncated {
		return reason, false
	}
	var long []labels.Label
	lb.Range(func(lbl labels.Label) {
		if len(lbl.Value) > l.MaxLabelValueLength {
			long = append(long, lbl)
		}
	})
	for _, lbl := range long {
		lb.Set(lbl.Name, truncateValue(lbl.Value, l.MaxLabelValueLength))
	}
	return "", true
}

// truncateValue cuts v to at most limit bytes: a prefix ending on a whole
// UTF-8 character (receivers refuse invalid UTF-8), then "~" and the hash
// of all of v.
func truncateValue(v string, limit int) string {
	keep := limit - truncatedSuffixLen
	for keep > 0 && !utf8.RuneStart(v[keep]) {
		keep--
	}
	return fmt.Sprintf("%s~%016x", v[:keep], xxhash.Sum64String(v))
}
