#!/usr/bin/env bash
# Prints the path of a nats-server binary of at least the version given (default 2.10.23, the floor
# for clusters in docs/operations.md): NATS_SERVER_BIN or the machine's own when new enough, else
# the nats-server package of a newer Debian release (trixie unless NATS_DEBIAN_SUITE says otherwise),
# unpacked once into ~/.cache/media-worker-nats/<version>/. Debian 12 ships 2.9.10; its
# packages mirror is reachable where the wider internet is not. Exit status 1, with the reason on
# stderr, when none can be had.
#
#   NATS_SERVER_BIN="$(scripts/get-nats-server.sh)"   # then the tests and scripts use it
set -euo pipefail

floor="${1:-2.10.23}"
suite="${NATS_DEBIAN_SUITE:-trixie}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/media-worker-nats"

version_of() { "$1" --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1; }
# True when version $1 is $2 or later.
at_least() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$2" ]; }
good() { [ -x "$1" ] && v="$(version_of "$1")" && [ -n "$v" ] && at_least "$v" "$floor"; }

for candidate in "${NATS_SERVER_BIN:-}" /usr/sbin/nats-server "$(command -v nats-server || true)" "$cache"/*/usr/sbin/nats-server; do
  if [ -n "$candidate" ] && good "$candidate"; then
    echo "$candidate"
    exit 0
  fi
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
arch="$(dpkg --print-architecture)"
if ! curl -fsSL "$mirror/dists/$suite/main/binary-$arch/Packages.xz" -o "$tmp/Packages.xz"; then
  echo "get-nats-server: cannot read Debian $suite's package index from $mirror" >&2
  exit 1
fi
# The nats-server stanza: its Version and Filename (the pool path of the .deb).
read -r version file < <(xz -dc "$tmp/Packages.xz" | awk '
  /^Package: / { mine = ($2 == "nats-server") }
  mine && /^Version: / { v = $2 }
  mine && /^Filename: / { print v, $2; exit }')
if [ -z "${file:-}" ]; then
  echo "get-nats-server: Debian $suite has no nats-server package for $arch" >&2
  exit 1
fi
curl -fsSL "$mirror/$file" -o "$tmp/nats-server.deb"
dest="$cache/$version"
mkdir -p "$dest"
dpkg -x "$tmp/nats-server.deb" "$dest"
bin="$dest/usr/sbin/nats-server"
if ! good "$bin"; then
  echo "get-nats-server: Debian $suite's nats-server ($version) is older than $floor" >&2
  exit 1
fi
echo "$bin"
