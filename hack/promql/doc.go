// Package promql checks the PromQL the project ships: the chart's alerts
// (deploy/charts/api-syncagent/files/alerts.yaml), its Grafana dashboard
// (files/dashboard.json) and the sample queries of docs/metrics.md. Every
// expression must parse with Prometheus' own parser, and every metric it
// names must be documented in docs/metrics.md. It is a module of its own
// so that the agent does not depend on Prometheus' server code; make
// test-unit runs its test.
package promql
