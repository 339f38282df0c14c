#!/usr/bin/env bash
# Install the Debian packages in scripts/apt-packages.txt that are missing. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t wanted < <(grep -vE '^\s*(#|$)' "$here/apt-packages.txt")
missing=()
for pkg in "${wanted[@]}"; do
  # A toolchain already on PATH (the machine image's Go or Node) satisfies its package.
  case "$pkg" in
    golang-go) command -v go >/dev/null && continue ;;
    nodejs) command -v node >/dev/null && continue ;;
    npm) command -v npm >/dev/null && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "missing Debian packages: ${missing[*]} (run 'make setup' as root, or install them)" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
