#!/usr/bin/env bash
# Browser test: record a scenario database, write the report with the real
# CLI, open it in headless Chromium (playwright-core). Screenshots land in
# ARTIFACT_DIR. usage: run.sh PHASEPROF FIXTURE ARTIFACT_DIR
set -eu
pp=$1 fixture=$2 art=$3
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -d "$here/node_modules/playwright-core" ]; then
  echo "run.sh: tests/browser/node_modules/playwright-core missing: run scripts/install-deps.sh --browser" >&2
  exit 1
fi
mkdir -p "$art"
rm -f "$art/run.db"
"$fixture" "$art/run.db" --steps 60 --ops 8
"$pp" report "$art/run.db" -o "$art/report.html"
NODE_PATH="$here/node_modules" node "$here/check_report.js" "$art/report.html" "$art" --full
