#!/usr/bin/env bash
# Prints the path of a Go >= 1.23 toolchain (the simulator's module needs it).
# Uses `go` on PATH when it is new enough; otherwise (Debian 12 ships Go 1.19,
# which predates GOTOOLCHAIN) fetches the toolchain module golang.org/toolchain
# through the module proxy with the old go into .tools, once.
# HARNESS_FORCE_GO_DOWNLOAD=1 skips the PATH check (to test the download path).
set -euo pipefail

MIN_MINOR=23
GO_TOOLCHAIN_GO=${HARNESS_GO_TOOLCHAIN:-go1.23.12}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${HARNESS_TOOLS:-$ROOT/.tools}
MODCACHE=$TOOLS/go-toolchain/mod

log() { echo "install-go: $*" >&2; }

# new_enough GO: true if GO runs and reports go1.N with N >= MIN_MINOR.
new_enough() {
    local version minor
    version=$("$1" env GOVERSION 2>/dev/null) || return 1
    [[ $version =~ ^go1\.([0-9]+) ]] || return 1
    minor=${BASH_REMATCH[1]}
    ((minor >= MIN_MINOR))
}

if [[ -z ${HARNESS_FORCE_GO_DOWNLOAD:-} ]] && command -v go >/dev/null && new_enough "$(command -v go)"; then
    command -v go
    exit 0
fi

case $(uname -m) in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) log "unsupported machine $(uname -m)"; exit 1 ;;
esac
module=golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN_GO.linux-$arch
dir=$MODCACHE/$module

if ! [[ -x $dir/bin/go ]] || ! new_enough "$dir/bin/go"; then
    old_go=$(command -v go || true)
    if [[ -z $old_go ]]; then
        log "no go on PATH to download $module with (apt-get install golang-go)"
        exit 1
    fi
    log "downloading $module with $("$old_go" env GOVERSION)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    printf 'module harness.local/gotoolchain\n' >"$tmp/go.mod"
    (cd "$tmp" && GOFLAGS=-modcacherw GOMODCACHE=$MODCACHE GOTOOLCHAIN=local GO111MODULE=on \
        "$old_go" mod download -json "$module" >"$tmp/download.json")
    dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$tmp/download.json")
    if [[ -z $dir ]]; then
        log "go mod download did not report a directory:"
        cat "$tmp/download.json" >&2
        exit 1
    fi
    # Module zips do not keep executable bits.
    chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
    new_enough "$dir/bin/go" || { log "$dir/bin/go does not run or is too old"; exit 1; }
fi
echo "$dir/bin/go"
