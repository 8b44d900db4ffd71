#!/usr/bin/env bash
# ctest's mcp/sdk_client: the Node test of `oomlens mcp` with the TypeScript SDK's client.
# It needs node and `npm ci --prefix tests/mcp` (scripts/quickstart.sh test does both). Without
# them it is skipped with a message, except in CI (CI=true), where it fails: CI must run it.
set -u
cd "$(dirname "$0")"
missing=""
command -v node >/dev/null 2>&1 || missing="node is not installed (apt-get install nodejs npm)"
if [ -z "$missing" ] && [ ! -d node_modules/@modelcontextprotocol/sdk ]; then
    missing="tests/mcp/node_modules is missing (run: npm ci --prefix tests/mcp)"
fi
if [ -n "$missing" ]; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $missing" >&2
        exit 1
    fi
    echo "SKIP: $missing"
    exit 77
fi
exec node --test --test-reporter=spec client.test.mjs
