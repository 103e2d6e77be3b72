package pluginhost

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// procRunner runs a plugin process through the launcher, in a process group of its own, for
// go-plugin (ClientConfig.RunnerFunc). It watches what go-plugin does not tell apart: what the
// plugin printed first, and how it ended.
type procRunner struct {
	cmd    *exec.Cmd
	name   string
	stdout io.ReadCloser
	stderr *stderrWatch

	mu        sync.Mutex
	firstLine string // the first line on stdout, the handshake if all is well
	gotLine   bool
	exited    bool
	exitErr   error
	waitOnce  sync.Once
	waitErr   error
}

func (r *procRunner) Start(context.Context) error {
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := r.cmd.Start(); err != nil {
		return err
	}
	// go-plugin reads stdout line by line for the handshake; keep a copy of the first line.
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReader(stdout)
		line, err := br.ReadString('\n')
		r.mu.Lock()
		r.firstLine, r.gotLine = strings.TrimRight(line, "\r\n"), line != ""
		r.mu.Unlock()
		if line != "" {
			if _, werr := pw.Write([]byte(line)); werr != nil {
				_ = pw.CloseWithError(werr)
				return
			}
		}
		if err != nil {
			_ = pw.CloseWithError(err)
			return
		}
		_, err = io.Copy(pw, br)
		_ = pw.CloseWithError(err)
	}()
	r.stdout, r.stderr = pr, &stderrWatch{r: stderr}
	return nil
}

func (r *procRunner) Wait(context.Context) error {
	r.waitOnce.Do(func() {
		r.waitErr = r.cmd.Wait()
		r.mu.Lock()
		r.exited, r.exitErr = true, r.waitErr
		r.mu.Unlock()
	})
	return r.waitErr
}

// Kill ends the plugin's whole process group: the plugin and anything it started.
func (r *procRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

func (r *procRunner) Diagnose(context.Context) string { return "" }
func (r *procRunner) Stdout() io.ReadCloser           { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser           { return r.stderr }
func (r *procRunner) Name() string                    { return r.name }

func (r *procRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// observed reports the first line the plugin printed and how it ended, if it did.
func (r *procRunner) observed() (firstLine string, gotLine, exited bool, exitErr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstLine, r.gotLine, r.exited, r.exitErr
}
