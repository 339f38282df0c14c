package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestEveryServedFactHasASourceAndItsValueIsInItsQuote(t *testing.T) {
	if problems := factProblems(); len(problems) > 0 {
		t.Fatalf("provenance problems:\n%s", strings.Join(problems, "\n"))
	}
	t.Logf("vsim: %d facts, each with a source", len(facts))
}

func TestTheCheckCatchesAValueItsQuoteDoesNotHold(t *testing.T) {
	saved := facts
	defer func() { facts = saved }()
	facts = []Fact{{"repair_timer.unit", "seconds", "documented", vsanAPIExtendedConfig, "delay time in minutes"}}
	if got := factProblems(); len(got) != 1 || !strings.Contains(got[0], `served "seconds"`) {
		t.Fatalf("a unit its quote contradicts was not caught: %v", got)
	}
}

func TestServedValuesComeOnlyFromTheTable(t *testing.T) {
	// A documented value written as a literal elsewhere would be served without its source.
	files, _ := filepath.Glob("*.go")
	for _, f := range facts {
		if f.Kind != "documented" || len(f.Value) < 8 {
			continue // short values ("repair", "5") are too common to search for
		}
		for _, name := range files {
			if name == "provenance.go" || strings.HasSuffix(name, "_test.go") {
				continue
			}
			text, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(text), strconv.Quote(f.Value)) {
				t.Errorf("%s serves %q as a literal: read it with fact(%q)", name, f.Value, f.ID)
			}
		}
	}
}

func TestTheMutationPassFlipsOneFactOnly(t *testing.T) {
	t.Setenv(mutationEnv, "vsim/disk_health.failed_bit")
	if factInt("disk_health.failed_bit") != 5 || factInt("disk_health.offline_bit") != 5 {
		t.Fatal("the named fact is not flipped, or another one is")
	}
	t.Setenv(mutationEnv, "vsim/permanent_clear.heals")
	if factBool("permanent_clear.heals") || asDocumented("permanent_clear.heals") {
		t.Fatal("a flipped boolean still reads as documented")
	}
}
