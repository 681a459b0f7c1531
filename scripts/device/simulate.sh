#!/usr/bin/env bash
# npm run device:simulate: the device check (scripts/device/check.py) end to end on this machine as
# on the bare GPU machine: a copy of what the device tool sends (the tracked and untracked-not-ignored
# files) plus the carried parts (.device/, from `npm run device:pack`), no node on PATH (only python3
# and a few basic tools), an empty HOME, and no network (`unshare -n` where it is permitted; the
# report says when it was not), and no Vulkan driver (the host's are hidden). The GPU steps report
# that there is no adapter; the rest really runs.
#
#   npm run device:simulate [-- CHECK-ARGS...]      default CHECK-ARGS: --small
#   DEVICE_PARTS=DIR          parts folder (default .device)
#   DEVICE_SIM_OUT=DIR        where the report lands (default .device/report-sim)
#   DEVICE_PYTHON=PATH        the python3 to run (default: this machine's python3, resolved)
#   DEVICE_SIM_MESA=DIR       a stand-in adapter: Mesa 25's lavapipe from scripts/device/get-mesa.sh, so
#                             the GPU code paths (WebGPU rows, upscayl-bin) run too, on the CPU
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
parts="${DEVICE_PARTS:-$root/.device}"
out="${DEVICE_SIM_OUT:-$root/.device/report-sim}"
python="${DEVICE_PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}"
[ "$#" -gt 0 ] || set -- --small

if ! ls "$parts"/p*/MANIFEST.json >/dev/null 2>&1; then
  echo "device:simulate: no parts in $parts: run \`npm run device:pack\` first" >&2
  exit 1
fi

sim="$(mktemp -d "${TMPDIR:-/tmp}/device-sim.XXXXXX")"
trap 'rm -rf "$sim"' EXIT
mkdir -p "$sim/repo/.device" "$sim/home" "$sim/bin" "$sim/out" "$sim/work"

# What the device tool sends: the working tree less what git ignores, then the carried parts.
(cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null --no-recursion -T - -cf -) | tar -xf - -C "$sim/repo"
for p in "$parts"/p*; do
  cp -al "$p" "$sim/repo/.device/" 2>/dev/null || cp -r "$p" "$sim/repo/.device/"
done

# The bare machine's tools: python3 and the basics, and no node.
ln -s "$python" "$sim/bin/python3"
for tool in sh bash env cat ls mkdir rm cp mv tar xz tee uname nproc sleep; do
  if command -v "$tool" >/dev/null; then ln -s "$(command -v "$tool")" "$sim/bin/$tool"; fi
done

isolate=()
network="not isolated"
if unshare -n true 2>/dev/null; then
  isolate=("$(command -v unshare)" -n)
  network="isolated (unshare -n)"
else
  network="not isolated: unshare -n is not permitted here ($(unshare -n true 2>&1 | head -n 1))"
fi

# A bare machine has no Vulkan driver, whatever this one has installed (Mesa's lavapipe comes with
# ffmpeg on Debian): the loader is pointed at an empty folder (VK_DRIVER_FILES since loader 1.3.207,
# VK_ICD_FILENAMES before) and its implicit layers are off, so the GPU steps find no adapter.
mkdir -p "$sim/no-vulkan-drivers"
vulkan=(VK_DRIVER_FILES="$sim/no-vulkan-drivers" VK_ICD_FILENAMES="$sim/no-vulkan-drivers" VK_LOADER_LAYERS_DISABLE="~implicit~")
adapter="no adapter (the host's Vulkan drivers hidden)"
if [ -n "${DEVICE_SIM_MESA:-}" ]; then
  vulkan=(VK_DRIVER_FILES="$DEVICE_SIM_MESA/lvp_icd.json" LD_LIBRARY_PATH="$DEVICE_SIM_MESA/lib")
  adapter="Mesa lavapipe as a stand-in adapter"
fi

echo "device:simulate: $sim (network: $network; $adapter)" >&2
status=0
(cd "$sim/repo" && env -i HOME="$sim/home" PATH="$sim/bin" OUT="$sim/out" "${vulkan[@]}" \
  DEVICE_SIMULATION="network $network; no node on PATH; empty HOME; $adapter" \
  "${isolate[@]}" python3 scripts/device/check.py --work "$sim/work" "$@") || status=$?
mkdir -p "$out"
cp "$sim/out"/* "$out/" 2>/dev/null || true
echo "device:simulate: report in $out (check exit status $status)" >&2
exit "$status"
