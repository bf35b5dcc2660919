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

// GOMAXPROCS follows the container's CPU limit (Go 1.25's default, which
// the module's go 1.24 line would otherwise turn off): the garbage
// collector's CPU cap is a share of GOMAXPROCS, and it must hold under
// the soft memory limit internal/memlimit sets.
//go:debug containermaxprocs=1
//go:debug updatemaxprocs=1

// Command api-syncagent publishes APIs of a Kubernetes service cluster into
// kcp and synchronizes the objects that kcp consumers create with it.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	// Time zones for CEL and template functions in images without
	// /usr/share/zoneinfo (make image's).
	_ "time/tzdata"

	"github.com/spf13/pflag"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kcp-syncagent/api-syncagent/internal/app"
	agentlog "github.com/kcp-syncagent/api-syncagent/internal/log"
	"github.com/kcp-syncagent/api-syncagent/internal/options"
	"github.com/kcp-syncagent/api-syncagent/internal/preview"
)

func main() {
	// A subcommand of its own; the agent's flags are untouched.
	if len(os.Args) > 1 && os.Args[1] == "preview" {
		os.Exit(preview.Command(os.Args[2:], os.Stdout, os.Stderr))
	}
	o := options.New()
	fs := pflag.NewFlagSet("api-syncagent", pflag.ContinueOnError)
	fs.SortFlags = true
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: api-syncagent --kcp-kubeconfig=FILE --namespace=NS (--apiexportendpointslice-ref=NAME | --apiexport-ref=NAME) [flags]\n")
		fmt.Fprintf(os.Stderr, "       api-syncagent preview -f PUBLISHEDRESOURCE (--crd FILE | --kubeconfig FILE) [--object FILE]... (see api-syncagent preview --help)\n\n")
		fmt.Fprintf(os.Stderr, "Publishes APIs of this service cluster into kcp (PublishedResources) and syncs their objects.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	o.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	o.Complete()
	warnings, err := o.Validate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Invalid command line:")
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(os.Stderr, "  - %s\n", line)
		}
		os.Exit(2)
	}

	log, err := agentlog.New(o.LogFormat, o.LogDebug)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, w := range warnings {
		log.Info("Warning: " + w)
	}
	// Arguments that are no flags are ignored, as by the reference; the
	// usual cause is a boolean flag with its value as a separate argument
	// ("--enable-leader-election false"), which leaves the flag on.
	for _, arg := range fs.Args() {
		log.Info(fmt.Sprintf("Warning: ignoring argument %q, which is no flag; a boolean flag takes its value as --flag=false", arg))
	}

	if err := app.Run(ctrl.SetupSignalHandler(), log, o); err != nil {
		log.Error(err, "Agent failed")
		os.Exit(1)
	}
}
