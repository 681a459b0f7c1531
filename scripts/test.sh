#!/usr/bin/env bash
# `npm test`: the set-up the tests need (scripts/test-setup.sh: Debian packages, nats-server 2.10,
# a supported Node), the build, the models (converted and checked once, cached in models/), types,
# lint, then every test file with vitest. Arguments go to vitest: `npm test -- test/cli.test.ts`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/test-setup.sh
npm run build
node dist/src/cli.js models prepare
npm run typecheck
npm run lint
exec node_modules/.bin/vitest run "$@"
