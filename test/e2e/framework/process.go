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

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a child process whose output goes to a log file.
type Process struct {
	Name    string
	LogPath string

	bin     string
	args    []string
	env     []string
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	err     error
}

// StartProcess starts bin with args; stdout and stderr go to logPath.
func StartProcess(name, bin, logPath string, args []string, env []string) (*Process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("failed to create log file: %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.Env = append(os.Environ(), env...)
	// Own process group, so a signal to the test run does not reach it first
	// and Stop can take down what it spawned.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, bin: bin, args: args, env: env, cmd: cmd, logFile: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to end (or ctx) and returns its exit error.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ExitCode returns the exit code of an ended process, -1 if it was killed
// by a signal or still runs.
func (p *Process) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Stop sends SIGTERM, waits up to grace, then kills the process group.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Kill sends SIGKILL to the process group and waits for the end.
func (p *Process) Kill() {
	if p.Exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Restart starts the same command again, logging to logPath; p must have
// ended.
func (p *Process) Restart(logPath string) (*Process, error) {
	return StartProcess(p.Name, p.bin, logPath, p.args, p.env)
}

// Pid returns the process id (the leader of its own process group).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Logs returns the log file's content so far.
func (p *Process) Logs() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}
