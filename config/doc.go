// Package config loads and validates the configuration file.
//
// Each package configures itself: watch.Config, queue.Config,
// kubelet.Config, customresource.Config, pull.Config and leader.Config
// hold their keys, defaults and Validate beside the code they configure.
// Config only composes them, with the agent's own few keys. Load decodes
// the YAML (unknown keys are errors), expands environment variables in
// external label values, validates every part and maps each error to its
// key and line ("file:line: key: message"), never quoting a secret.
// Effective prints the configuration back, defaults included and secrets
// masked, for check-config.
package config
