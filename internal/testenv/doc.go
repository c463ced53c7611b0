// Package testenv starts the real programs the end-to-end tests and the
// demo run against, all on 127.0.0.1 ports chosen at start: etcd and
// kube-apiserver (a control plane with no kubelet or controllers), and the
// receivers: Prometheus with its remote-write receiver, VictoriaMetrics, and
// Thanos receive with Thanos query.
//
// The binaries come from scripts/build-tools.sh, which builds them from the
// Go module proxy into .tools/bin (KSP_TOOLS_BIN overrides the folder).
package testenv
