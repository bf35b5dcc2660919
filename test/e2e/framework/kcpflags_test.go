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

package framework

import "testing"

// startOptions is an excerpt of `kcp start options` of kcp v0.32.2: a flag
// with a shorthand, continuation lines of a long help text and a help text
// that names a flag it does not list (external-hostname is hidden there).
const startOptions = `Usage:
  kcp start [flags]

Kcp flags:

      --batteries-included strings                         A list of batteries included.
                                                           - admin:  creates an admin.kubeconfig in the path passed to --kubeconfig-path.
      --shard-name string                                  A name of this kcp shard. (default "root")

Generic flags:

  -v, --v Level                        number for the log level verbosity (default 2)
      --service-account-jwks-uri string   Useful if the key set is served from a URL other than the API server's external (as auto-detected or overridden with external-hostname).
      --secure-port int                        The port on which to serve HTTPS. (default 6443)
`

func TestParseStartOptions(t *testing.T) {
	flags := parseStartOptions([]byte(startOptions))
	for _, f := range []string{"batteries-included", "shard-name", "v", "service-account-jwks-uri", "secure-port"} {
		if !flags[f] {
			t.Errorf("flag %s not found in %v", f, flags)
		}
	}
	for _, f := range []string{"kubeconfig-path", "external-hostname"} {
		if flags[f] {
			t.Errorf("flag %s is only named in a help text, not listed", f)
		}
	}
}
