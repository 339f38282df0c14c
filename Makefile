# Two commands matter: `make demo` (the demo suites against the embedded lab) and
# `make test` (the harness's own tests). Both install what they need, idempotently.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
TOOLS := $(CURDIR)/.tools
STAMPS := .setup-stamps
TOXIPROXY_VERSION := v2.12.0
ALLURE_VERSION := 3.18.0
OUT ?= $(CURDIR)/out

.PHONY: setup demo test test-go test-lint test-integration test-nightly lint mutations clean-lab
setup: $(STAMPS)/apt $(STAMPS)/venv $(TOOLS)/bin/toxiproxy-server $(STAMPS)/allure-$(ALLURE_VERSION) \
	$(TOOLS)/bin/harness-vsim $(TOOLS)/bin/govc

$(STAMPS):
	mkdir -p $(STAMPS)

$(STAMPS)/apt: scripts/apt-packages.txt scripts/install-apt.sh | $(STAMPS)
	scripts/install-apt.sh
	touch $@

$(STAMPS)/venv: pyproject.toml | $(STAMPS)
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]' tox
	touch $@

$(TOOLS)/bin/toxiproxy-server: | $(STAMPS)/apt
	mkdir -p $(TOOLS)/bin $(TOOLS)/go
	cd /tmp && GOBIN=$(TOOLS)/bin GOPATH=$(TOOLS)/go GOFLAGS=-modcacherw \
	  go install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	mv $(TOOLS)/bin/server $@

$(STAMPS)/allure-$(ALLURE_VERSION): | $(STAMPS)/apt
	mkdir -p $(TOOLS)/allure
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/allure allure@$(ALLURE_VERSION)
	touch $@

# The vSphere simulator and govc (same Go module, govmomi v0.52.0), built with a
# Go >= 1.23 that scripts/install-go.sh finds or fetches into $(TOOLS).
VSIM_SOURCES := $(shell find harness_lab/vsim -name '*.go' -o -name go.mod -o -name go.sum)
VSIM_GO = cd harness_lab/vsim && GOFLAGS=-modcacherw GOPATH=$(TOOLS)/go GOTOOLCHAIN=local \
	"$$(HARNESS_TOOLS=$(TOOLS) $(CURDIR)/scripts/install-go.sh)"

$(TOOLS)/bin/harness-vsim: $(VSIM_SOURCES) scripts/install-go.sh | $(STAMPS)/apt
	mkdir -p $(TOOLS)/bin
	$(VSIM_GO) build -trimpath -o $@ .

$(TOOLS)/bin/govc: $(VSIM_SOURCES) scripts/install-go.sh | $(STAMPS)/apt
	mkdir -p $(TOOLS)/bin
	$(VSIM_GO) build -trimpath -ldflags "-X github.com/vmware/govmomi/cli/flags.BuildVersion=v0.52.0" -o $@ ./cmd/govc

demo: setup
	$(PY) -m harness demo --out $(OUT) $(if $(FULL),--full)

TIERS := PATH=$(CURDIR)/$(VENV)/bin:$$PATH HARNESS_TOOLS=$(TOOLS) scripts/test-tiers

# the unit tier (both cores), then the integration tier with the simulator's Go tests and lint beside it (they end
# while the lab comes up); each target's output in one piece (-Otarget)
test: setup
	$(TIERS) unit
	$(MAKE) --no-print-directory -j3 -Otarget test-go test-lint test-integration

test-integration: setup
	$(TIERS) integration

test-go: setup
	$(VSIM_GO) test -count=1 ./...

test-lint: setup
	$(TIERS) lint

# the long and measured specs, left out of `make test` (README, "Tiers")
test-nightly: setup
	$(TIERS) nightly

mutations: setup $(TOOLS)/bin/harness-vsim
	HARNESS_TOOLS=$(TOOLS) $(PY) -m tests.support.mutations

lint: test-lint

clean-lab:
	$(PY) -m harness lab down --all
