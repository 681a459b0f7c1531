#!/usr/bin/env bash
# What the tests need on a fresh Debian machine, installed or fetched when missing; quick (seconds)
# when everything is there. `npm test` (scripts/test.sh) and `.ci/run` source it, so the variables it
# exports (PATH with a supported Node first, NATS_SERVER_BIN) reach every process the tests start.
#
#   . scripts/test-setup.sh      # sourced: exports PATH and NATS_SERVER_BIN
#
# Debian packages come through apt-get (as root, or with sudo when there is one; otherwise it says
# which to install and goes on: the tests that need them skip or fail saying what is missing).
# TEST_NODE_MAJOR (default: package.json's engines floor, 22): a machine whose node is older gets
# that major from the npm registry's `node` package (.ci/run asks for 26, the active LTS).

test_setup_missing=()
command -v ffmpeg >/dev/null 2>&1 || test_setup_missing+=(ffmpeg)
command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || test_setup_missing+=(nats-server)
# Real video with faces for the lip-sync and video tests (Megamind.avi).
[ -f /usr/share/doc/opencv-doc/examples/data/Megamind.avi ] || test_setup_missing+=(opencv-doc)
# promtool checks and unit-tests the shipped alert rules (deploy/observability/); Debian ships it in
# the prometheus package (without it the test skips and says why).
command -v promtool >/dev/null 2>&1 || test_setup_missing+=(prometheus)
if [ "${#test_setup_missing[@]}" -gt 0 ]; then
  test_setup_as_root=()
  [ "$(id -u)" = 0 ] || test_setup_as_root=(sudo)
  if [ "${#test_setup_as_root[@]}" -eq 0 ] || command -v sudo >/dev/null 2>&1; then
    echo "test-setup: installing ${test_setup_missing[*]} (Debian packages)"
    "${test_setup_as_root[@]}" apt-get -o DPkg::Lock::Timeout=300 update -qq
    DEBIAN_FRONTEND=noninteractive "${test_setup_as_root[@]}" apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${test_setup_missing[@]}" >/dev/null
  else
    echo "test-setup: missing ${test_setup_missing[*]}; as root: apt-get install ${test_setup_missing[*]}" >&2
  fi
fi

# The suite runs on a nats-server at the floor for clusters (docs/operations.md, "Versions"): Debian 12's
# is 2.9.10, so a newer Debian's package is unpacked into the cache (best effort; without it the cluster
# tests skip and say why).
if test_setup_nats="$("$(dirname "${BASH_SOURCE[0]}")/get-nats-server.sh" 2.10.23)"; then
  export NATS_SERVER_BIN="$test_setup_nats"
else
  echo "test-setup: no nats-server 2.10.23 or later; the cluster tests will be skipped" >&2
fi

# Node from the npm registry's `node` package, outside the project's dependencies and first on PATH
# (npm, the build and every process the tests start then run on it); the README's first line does the same.
test_setup_node_major="${TEST_NODE_MAJOR:-22}"
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt "$test_setup_node_major" ]; then
  test_setup_node_prefix="${XDG_CACHE_HOME:-$HOME/.cache}/media-worker-node-$test_setup_node_major"
  if [ ! -x "$test_setup_node_prefix/node_modules/.bin/node" ]; then
    echo "test-setup: installing Node $test_setup_node_major (the machine has $(node --version))"
    npm install --no-audit --no-fund --no-save --prefix "$test_setup_node_prefix" "node@$test_setup_node_major" >/dev/null
  fi
  export PATH="$test_setup_node_prefix/node_modules/.bin:$PATH"
fi

# nats-py for the Python control plane example (test/examples/): best effort, the test says why it
# skips when it is missing (pip may refuse a system Python, PEP 668).
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import nats' 2>/dev/null; then
  python3 -m pip install -q nats-py 2>/dev/null || echo "test-setup: nats-py not installed; the Python example test will be skipped" >&2
fi
echo "test-setup: Node $(node --version), $("${NATS_SERVER_BIN:-nats-server}" --version 2>/dev/null || echo 'no nats-server'), ffmpeg $(ffmpeg -version 2>/dev/null | head -n 1 | cut -d' ' -f3)"
