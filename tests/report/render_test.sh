#!/usr/bin/env bash
# `sentinel report` as a reader sees it: headless Chromium (Debian's `chromium`) loads the report of a
# committed profile from a file, runs its script without errors or blocked requests, and the page has
# every section and chart, with the same numbers as --json. Exit 77 (skipped) when chromium is absent.
# Usage: render_test.sh SENTINEL_BIN PROFILE
set -u
sentinel=$1
profile=$2
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIPPED: chromium is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi
. "$(cd "$(dirname "$0")" && pwd)/../check_lib.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

check "report written" "$sentinel" report "$profile" -o "$dir/report.html" --json "$dir/report.json" --no-optimal
check "JSON written" python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["format"]=="sentinel-report"' "$dir/report.json"

# --dump-dom prints the page after its scripts ran; console messages (script errors, requests the
# page's Content-Security-Policy refused) go to the log on stderr.
HOME=$dir timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$dir/chromium" --enable-logging=stderr --v=0 \
  --dump-dom "file://$dir/report.html" > "$dir/dom.html" 2> "$dir/console.txt"
check "chromium rendered the page" test -s "$dir/dom.html"
check "the page's script ran to its end" grep -q 'data-report-ready="yes"' "$dir/dom.html"
if grep -E 'CONSOLE.*(Uncaught|Error|Refused)' "$dir/console.txt"; then
  check "no script errors or refused requests" false
else
  check "no script errors or refused requests" true
fi
for id in summary what-profiled plan-promise what-happened policies chart-dram chart-objects chart-traffic \
          chart-sweep sweep report-data; do
  check "element #$id present" grep -q "id=\"$id\"" "$dir/dom.html"
done
check "a series per policy in the DRAM chart" test "$(grep -o 'data-series="[^"]*"' "$dir/dom.html" | sort -u | wc -l)" -ge 7
check "object rows drawn" grep -q 'class="obj-row"' "$dir/dom.html"
check "the budget drawn as a line" grep -q 'class="ref r-budget"' "$dir/dom.html"
# The numbers on the page are the ones in --json: the embedded model equals the file.
python3 - "$dir/dom.html" "$dir/report.json" > "$dir/same.txt" 2>&1 <<'PY'
import html, json, re, sys
page = open(sys.argv[1]).read()
m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
print(json.loads(m.group(1)) == json.load(open(sys.argv[2])))
PY
check "embedded JSON equals --json" grep -qx True "$dir/same.txt"
checks_summary
