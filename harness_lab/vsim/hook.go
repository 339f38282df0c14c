package main

import (
	"bytes"
	"context"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// HookTimeout bounds every hook run.
const HookTimeout = 60 * time.Second

// Hook runs the configured command with an action appended, asynchronously:
// the simulator never waits for it to answer a vim call. Calls about the same
// node (or site) run one after the other, in the order they were made, so a
// power-on never overtakes the power-off before it. Output is logged.
type Hook struct {
	argv []string
	env  []string
	log  *log.Logger
	ctx  context.Context
	wg   sync.WaitGroup
	mu   sync.Mutex
	last map[string]chan struct{} // closed when the latest call for that key ends
}

// NewHook returns a hook that runs argv (nothing if argv is empty) until ctx
// ends, with the simulator's environment minus the variables named in secret.
func NewHook(ctx context.Context, argv []string, logger *log.Logger, secret ...string) *Hook {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(secret, name) {
			env = append(env, kv)
		}
	}
	return &Hook{argv: argv, env: env, log: logger, ctx: ctx, last: map[string]chan struct{}{}}
}

// Run starts `argv... action args...` in the background, after the previous
// call with the same first argument has ended.
func (h *Hook) Run(action string, args ...string) { h.start(action, args) }

// RunWait is Run, waiting for the call to end (bounded by HookTimeout); it
// reports whether the command succeeded. Without a command it succeeds at once.
func (h *Hook) RunWait(action string, args ...string) bool {
	result := h.start(action, args)
	if result == nil {
		return true
	}
	return <-result
}

// start runs the call in the background; its result channel (nil without a
// command) receives whether it succeeded.
func (h *Hook) start(action string, args []string) chan bool {
	if len(h.argv) == 0 {
		return nil
	}
	argv := append(append(append([]string(nil), h.argv...), action), args...)
	key := ""
	if len(args) > 0 {
		key = args[0]
	}
	h.mu.Lock()
	prev, done := h.last[key], make(chan struct{})
	h.last[key] = done
	h.mu.Unlock()
	result := make(chan bool, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer close(done)
		ok := false
		defer func() { result <- ok }()
		if prev != nil {
			select {
			case <-prev:
			case <-h.ctx.Done():
				return
			}
		}
		ctx, cancel := context.WithTimeout(h.ctx, HookTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = h.env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.WaitDelay = 2 * time.Second
		start := time.Now()
		err := cmd.Run()
		line := strings.Join(append([]string{action}, args...), " ")
		text := strings.TrimSpace(out.String())
		if err != nil {
			h.log.Printf("hook %s: failed after %s: %v: %s", line, time.Since(start).Round(time.Millisecond), err, text)
			return
		}
		ok = true
		h.log.Printf("hook %s: ok in %s: %s", line, time.Since(start).Round(time.Millisecond), text)
	}()
	return result
}

// Wait waits for running hooks (they end by HookTimeout or the context at the latest).
func (h *Hook) Wait() { h.wg.Wait() }
