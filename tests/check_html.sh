#!/usr/bin/env bash
# Opens an HTML report in headless Chromium and checks that it renders:
# takes a screenshot, dumps the DOM and looks for an expected text in it,
# and fails on console errors (script errors, failed loads) from the page.
#
# Usage: check_html.sh REPORT.html [SCREENSHOT.png] [EXPECTED_TEXT]
#   SCREENSHOT defaults to REPORT.png beside the report; EXPECTED_TEXT to
#   "metron report" (the page title). WINDOW=WIDTHxHEIGHT sets the window
#   (default 1200,2400). Needs Debian's `chromium` package.
set -euo pipefail

if [[ $# -lt 1 || ! -f $1 ]]; then
    echo "usage: $0 REPORT.html [SCREENSHOT.png] [EXPECTED_TEXT]" >&2
    exit 2
fi
html=$(realpath "$1")
shot=${2:-${html%.html}.png}
expect=${3:-metron report}
window=${WINDOW:-1200,2400}
# The page's address, with spaces encoded (the rest of a path is URL-safe
# enough for a local file).
url="file://${html// /%20}"

command -v chromium >/dev/null || { echo "chromium not found: apt-get install -y chromium" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A fresh profile and no background services: nothing but the page runs,
# and nothing reaches the network on the browser's own account.
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0)

rm -f "$shot"
chromium "${flags[@]}" --screenshot="$shot" --window-size="$window" "$url" \
    >"$work/shot.out" 2>"$work/shot.log" || { cat "$work/shot.log" >&2; echo "FAIL: screenshot run" >&2; exit 1; }
chromium "${flags[@]}" --dump-dom "$url" >"$work/dom.html" 2>"$work/dom.log" \
    || { cat "$work/dom.log" >&2; echo "FAIL: DOM dump run" >&2; exit 1; }

status=0
if [[ ! -s $shot ]]; then
    echo "FAIL: no screenshot at $shot" >&2
    status=1
fi
if ! grep -qF -- "$expect" "$work/dom.html"; then
    echo "FAIL: \"$expect\" not in the rendered DOM" >&2
    status=1
fi
# Console messages name their source; only the page's own count (the
# browser logs unrelated noise about its sandbox, GPU and D-Bus).
if grep -hE 'Uncaught|ERROR:CONSOLE|:CONSOLE.*(Error|Failed)' "$work/shot.log" "$work/dom.log" \
    | grep -F -- "${url##*/}" >"$work/console.txt"; then
    echo "FAIL: console errors from the page:" >&2
    cat "$work/console.txt" >&2
    status=1
fi
if [[ $status -eq 0 ]]; then
    echo "OK: $1 rendered; screenshot $shot ($(wc -c <"$shot") bytes)"
fi
exit $status
