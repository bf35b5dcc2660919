// Copyright 2026 The api-syncagent Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// Package promql checks the PromQL the project ships: the chart's alerts
// (deploy/charts/api-syncagent/files/alerts.yaml), its Grafana dashboard
// (files/dashboard.json) and the sample queries of docs/metrics.md. Every
// expression must parse with Prometheus' own parser, and every metric it
// names must be documented in docs/metrics.md. It is a module of its own
// so that the agent does not depend on Prometheus' server code; make
// test-unit runs its test.
package promql
