#!/usr/bin/env bash
# Fuzzes each target for a bounded time: fuzz/run.sh [SECONDS_PER_TARGET]
#
# Installs what it needs on a fresh machine (a nightly toolchain, cargo-fuzz),
# runs every target for SECONDS_PER_TARGET (default 60) starting from the
# seeds in fuzz/corpus/<target>, and exits non-zero if any target finds a
# crash; libFuzzer then says which input, saved under fuzz/artifacts/.
# Too slow for every CI run: run it by hand, or on a schedule.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
case $seconds in
'' | *[!0-9]*)
    echo "usage: fuzz/run.sh [SECONDS_PER_TARGET]" >&2
    exit 2
    ;;
esac

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi
# The same dependency versions as the project's own build; cargo adds the
# fuzzing crates to the copy.
[ -f fuzz/Cargo.lock ] || cp Cargo.lock fuzz/Cargo.lock

targets=(response chunked histogram hpack h2_session)
# Build all targets before the clock starts.
cargo +nightly fuzz build

failed=()
for target in "${targets[@]}"; do
    echo "== $target: ${seconds}s"
    mkdir -p "fuzz/grown/$target"
    # The first directory takes what libFuzzer finds; the seeds stay as
    # they are. Limits: a header claiming gigabytes must be refused, not
    # allocated, and no input may take seconds.
    if ! cargo +nightly fuzz run "$target" "fuzz/grown/$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 \
        -print_final_stats=1; then
        failed+=("$target")
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: crashes in: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzz: no crash in ${targets[*]} (${seconds}s each)"
