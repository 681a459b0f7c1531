#!/usr/bin/env bash
# public-surface.sh <repo> <outdir>: what a checkout shows the outside, to diff before and after a
# refactor (issue 55, item 7): every command's --help, the benchmarks' list and --help, the
# settings reference, docs/schemas/. The OpenAPI document and the contract are frozen by
# test/gateway/contract-snapshot.test.ts. Needs a built checkout (npm run build).
#   bash scripts/public-surface.sh . /tmp/after && diff -r /tmp/before /tmp/after
set -u
repo=$1; out=$2; mkdir -p "$out"
cd "$repo"
cli="node dist/src/cli.js"
$cli --help > "$out/help.txt" 2>&1
# every command and subcommand's help, found from the help text
cmds=$($cli --help | sed -n '/^Commands:/,$p' | awk 'NR>1 && /^  [a-z]/{print $1}' | grep -v '^help$')
for c in $cmds; do
  $cli $c --help > "$out/help-$c.txt" 2>&1
  subs=$($cli $c --help | sed -n '/^Commands:/,$p' | awk 'NR>1 && /^  [a-z]/{print $1}' | grep -v '^help$')
  for s in $subs; do $cli $c $s --help > "$out/help-$c-$s.txt" 2>&1; done
done
$cli bench > "$out/bench-list.txt" 2>&1
for b in $($cli bench 2>/dev/null | awk '/^  [a-z]/{print $1}'); do $cli bench $b --help > "$out/bench-$b.txt" 2>&1; done
$cli config --reference > "$out/config-reference.md" 2>&1
cp -r docs/schemas "$out/schemas"
cp docs/configuration.md "$out/configuration.md"
echo "captured $(ls $out | wc -l) entries"
