package main

import (
	"bytes"
	"context"
	"log"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// HookTimeout bounds every hook run.
const HookTimeout = 60 * time.Second

// Hook runs the configured command with an action appended, asynchronously:
// the simulator never waits for it to answer a vim call. Output is logged.
type Hook struct {
	argv []string
	log  *log.Logger
	ctx  context.Context
	wg   sync.WaitGroup
}

// NewHook returns a hook that runs argv (nothing if argv is empty) until ctx ends.
func NewHook(ctx context.Context, argv []string, logger *log.Logger) *Hook {
	return &Hook{argv: argv, log: logger, ctx: ctx}
}

// Run starts `argv... action args...` in the background.
func (h *Hook) Run(action string, args ...string) {
	if len(h.argv) == 0 {
		return
	}
	argv := append(append(append([]string(nil), h.argv...), action), args...)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ctx, cancel := context.WithTimeout(h.ctx, HookTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
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
		h.log.Printf("hook %s: ok in %s: %s", line, time.Since(start).Round(time.Millisecond), text)
	}()
}

// Wait waits for running hooks (they end by HookTimeout or the context at the latest).
func (h *Hook) Wait() { h.wg.Wait() }
