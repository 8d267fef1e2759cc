package main

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// playwrightJS is the Node side (see the file).
//
//go:embed playwright.js
var playwrightJS []byte

// ErrPlaywright wraps every failure of the Playwright side.
var ErrPlaywright = errors.New("playwright")

// pwClient drives playwright.js: one command, one answer, in turn.
type pwClient struct {
	Version string

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout lines; closed when the process's stdout ends
	stderr *limitedBuf
	done   sync.WaitGroup
}

// ensurePlaywright installs playwright-core into dir when missing and
// writes the Node script there (so that require finds node_modules).
func ensurePlaywright(ctx context.Context, dir, version string, log io.Writer) (script string, err error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("%w: node not found: %v", ErrPlaywright, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: %v", ErrPlaywright, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
			if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private":true}`+"\n"), 0o644); err != nil {
				return "", fmt.Errorf("%w: %v", ErrPlaywright, err)
			}
		}
		fmt.Fprintf(log, "installing playwright-core@%s into %s…\n", version, dir)
		c := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", dir, "playwright-core@"+version)
		c.Stdout, c.Stderr = log, log
		if err := c.Run(); err != nil {
			return "", fmt.Errorf("%w: npm install playwright-core@%s: %v", ErrPlaywright, version, err)
		}
	}
	script = filepath.Join(dir, "benchperception-playwright.js")
	if err := os.WriteFile(script, playwrightJS, 0o644); err != nil {
		return "", fmt.Errorf("%w: %v", ErrPlaywright, err)
	}
	return script, nil
}

// startPlaywright runs the script against the browser's CDP endpoint and
// waits for its tab.
func startPlaywright(ctx context.Context, script, wsURL string) (*pwClient, error) {
	c := exec.Command("node", script, wsURL)
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &pwClient{cmd: c, stdin: stdin, lines: make(chan string, 1), stderr: &limitedBuf{max: 8 << 10}}
	c.Stderr = p.stderr
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("%w: start node: %v", ErrPlaywright, err)
	}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	var hello struct {
		Ready   bool   `json:"ready"`
		Version string `json:"version"`
		Error   string `json:"error"`
	}
	if err := p.read(ctx, 2*time.Minute, &hello); err != nil || !hello.Ready {
		p.Close()
		if err == nil {
			err = fmt.Errorf("%w: %s", ErrPlaywright, hello.Error)
		}
		return nil, err
	}
	p.Version = hello.Version
	return p, nil
}

func (p *pwClient) read(ctx context.Context, timeout time.Duration, out any) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return fmt.Errorf("%w: node exited: %s", ErrPlaywright, p.stderr.String())
		}
		if err := json.Unmarshal([]byte(line), out); err != nil {
			return fmt.Errorf("%w: bad answer %q: %v", ErrPlaywright, line, err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("%w: no answer within %v", ErrPlaywright, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

type pwAnswer struct {
	OK    bool    `json:"ok"`
	MS    float64 `json:"ms"`
	Chars int     `json:"chars"`
	Error string  `json:"error"`
}

func (p *pwClient) call(ctx context.Context, cmd map[string]string) (pwAnswer, error) {
	var a pwAnswer
	data, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(data, '\n')); err != nil {
		return a, fmt.Errorf("%w: %v", ErrPlaywright, err)
	}
	if err := p.read(ctx, 6*time.Minute, &a); err != nil {
		return a, err
	}
	if a.Error != "" {
		return a, fmt.Errorf("%w: %s", ErrPlaywright, a.Error)
	}
	return a, nil
}

// Goto loads url in Playwright's tab (waits for load).
func (p *pwClient) Goto(ctx context.Context, url string) error {
	_, err := p.call(ctx, map[string]string{"op": "goto", "url": url})
	return err
}

// Snapshot takes the AI snapshot and returns its time (measured in Node,
// around the call) and size.
func (p *pwClient) Snapshot(ctx context.Context) (float64, int, error) {
	a, err := p.call(ctx, map[string]string{"op": "snap"})
	return a.MS, a.Chars, err
}

// Close ends stdin (the script closes its tab and disconnects), then waits
// for the process, killing it when it does not exit within 30 s.
func (p *pwClient) Close() {
	_ = p.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-exited
	}
	for range p.lines {
	}
	p.done.Wait()
}

// limitedBuf keeps the first max bytes written (Node's stderr).
type limitedBuf struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (l *limitedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
