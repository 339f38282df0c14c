package main

import (
	"context"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHookCallsForOneNodeRunInOrder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "calls")
	// The first call is the slowest: the later ones must still wait for it.
	script := `case "$1" in power-off) sleep 1;; esac; echo "$@" >> "$0"`
	h := NewHook(context.Background(), []string{"/bin/bash", "-c", script, out}, log.New(io.Discard, "", 0))
	h.Run("power-off", "node-a")
	h.Run("power-on", "node-a")
	h.Run("io-pause", "node-a", "3")
	h.Wait()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := "power-off node-a\npower-on node-a\nio-pause node-a 3\n"
	if string(data) != want {
		t.Fatalf("hook calls ran as\n%s\nwant\n%s", data, want)
	}
}

func TestHookDoesNotSeeTheSecretVariables(t *testing.T) {
	t.Setenv("VSIM_TEST_SECRET", "s3cret")
	t.Setenv("VSIM_TEST_PLAIN", "visible")
	out := filepath.Join(t.TempDir(), "env")
	h := NewHook(context.Background(), []string{"/bin/sh", "-c", `env > "$0"`, out}, log.New(io.Discard, "", 0),
		"VSIM_TEST_SECRET")
	h.Run("power-on", "node-a")
	h.Wait()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "VSIM_TEST_PLAIN=visible") || strings.Contains(string(data), "s3cret") {
		t.Fatalf("hook environment:\n%s", data)
	}
}
