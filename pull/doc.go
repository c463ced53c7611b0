// Package pull serves the state series for scraping, as kube-state-metrics'
// /metrics page serves them, for setups that scrape as well as push.
//
// A scrape reads the agent's series maps through Source, the one method
// this package needs of them: each map hands out its objects' series sets,
// which are never modified once stored, and the Handler writes them family
// by family (HELP and TYPE once per family), in the text format or
// OpenMetrics, gzipped when asked, streaming in pieces rather than holding
// the body. The agent publishes a new View when its resources change.
package pull
