#!/usr/bin/env bash
# Prints a folder holding Mesa's lavapipe (the Vulkan driver that runs on the CPU) new enough for
# Dawn, ONNX Runtime's WebGPU: Debian 12's Mesa 22.3 is refused ("No supported adapters"); the
# Mesa of bookworm-backports (25.0, built for Debian 12's libc) is accepted. Unpacked once into
# ~/.cache/media-worker-mesa/<version>/ as scripts/get-nats-server.sh unpacks nats-server: no
# install, nothing outside that folder. In the folder: lvp_icd.json (the driver file, its library
# path absolute) and lib/ (lavapipe and the libdrm it needs). Use them as:
#
#   mesa="$(scripts/device/get-mesa.sh)"
#   VK_DRIVER_FILES="$mesa/lvp_icd.json" LD_LIBRARY_PATH="$mesa/lib" node ...
#
# Exit status 1, with the reason on stderr, when it cannot be had (no route to Debian's mirror, or a
# library lavapipe needs is missing here).
set -euo pipefail

suite="${MESA_DEBIAN_SUITE:-bookworm-backports}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/media-worker-mesa"
packages=(mesa-vulkan-drivers libdrm2 libdrm-amdgpu1 libdrm-common)

for done in "$cache"/*/lvp_icd.json; do
  if [ -f "$done" ]; then
    dirname "$done"
    exit 0
  fi
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
arch="$(dpkg --print-architecture)"
if ! curl -fsSL --max-time 120 "$mirror/dists/$suite/main/binary-$arch/Packages.xz" -o "$tmp/Packages.xz"; then
  echo "get-mesa: cannot read Debian $suite's package index from $mirror" >&2
  exit 1
fi
xz -dc "$tmp/Packages.xz" > "$tmp/Packages"
version=""
for pkg in "${packages[@]}"; do
  read -r v file < <(awk -v want="$pkg" '
    /^Package: / { mine = ($2 == want) }
    mine && /^Version: / { v = $2 }
    mine && /^Filename: / { print v, $2; exit }' "$tmp/Packages") || true
  if [ -z "${file:-}" ]; then
    echo "get-mesa: Debian $suite has no $pkg for $arch" >&2
    exit 1
  fi
  [ "$pkg" = mesa-vulkan-drivers ] && version="$v"
  curl -fsSL --max-time 300 "$mirror/$file" -o "$tmp/$pkg.deb"
  dpkg -x "$tmp/$pkg.deb" "$tmp/root"
  file=""
done

dest="$cache/${version//[^A-Za-z0-9.+-]/_}"
rm -rf "$dest"
mkdir -p "$dest/lib"
cp -a "$tmp/root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"/. "$dest/lib/"
missing="$(LD_LIBRARY_PATH="$dest/lib" ldd "$dest/lib/libvulkan_lvp.so" | grep 'not found' || true)"
if [ -n "$missing" ]; then
  echo "get-mesa: lavapipe $version needs libraries this machine lacks: $missing" >&2
  rm -rf "$dest"
  exit 1
fi
printf '{\n  "ICD": { "api_version": "1.3.0", "library_path": "%s" },\n  "file_format_version": "1.0.0"\n}\n' "$dest/lib/libvulkan_lvp.so" > "$dest/lvp_icd.json"
echo "$dest"
