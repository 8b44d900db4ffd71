#!/usr/bin/env bash
# Short libFuzzer runs of every target in fuzz/ (fuzz/README.md), as CI runs them:
#   scripts/run-fuzzers.sh [BUILD_DIR]      (default build/fuzz, made by `cmake --preset fuzz`)
# Each target starts from its committed seeds (fuzz/corpus/<target>, read only) with a fixed seed
# and runs OOMLENS_FUZZ_SECONDS seconds (default 30), as many targets at a time as there are cores,
# or fewer: a fixed number of inputs per target (runs_for below, about 60% of what a quiet 2-core
# machine reaches in 30 s) makes the run the same on every machine, so CI replays a run that
# passed instead of failing on whatever a faster machine reaches first. OOMLENS_FUZZ_RUNS=0 lifts
# that bound for exploring by hand (then the time bound alone stops each target).
# First every committed seed is replayed once: a crash there is a regression and fails the run.
# Then the exploration: a crash, leak, timeout or broken invariant it finds fails the run too (a
# bug found on CI must not wait for someone to read the log). Its reproducer is printed in the log
# (base64, so that it survives a CI workspace that is thrown away) and copied into
# fuzz/corpus/<target>/crash-<hash>, where tests/parsers/tst_fuzzregression.cpp (and, for mcp,
# tests/cli/tst_mcpfuzzregression.cpp) replays it once it is committed (minimize it and give it a
# name that says what it hit; see fuzz/README.md).
set -uo pipefail
cd "$(dirname "$0")/.."

build_dir="${1:-build/fuzz}"
seconds="${OOMLENS_FUZZ_SECONDS:-30}"
jobs="${OOMLENS_FUZZ_JOBS:-$(nproc)}"
targets=(text pickle container case sidecar rules config plan mcp)
runs_for() {
    [ "${OOMLENS_FUZZ_RUNS:-}" = 0 ] && { echo -1; return; }
    case "$1" in
    text) echo 60000 ;;
    pickle) echo 100000 ;;
    container) echo 750000 ;;
    case) echo 6000 ;;
    sidecar) echo 9000 ;;
    rules) echo 45000 ;;
    config) echo 140000 ;;
    plan) echo 50000 ;;
    mcp) echo 2000 ;;
    esac
}
# The longest input a target is given; mcp's first seed is a 100 KB line nested 50,000 deep.
max_len_for() {
    case "$1" in
    mcp) echo 131072 ;;
    *) echo 65536 ;;
    esac
}
work="$(mktemp -d /tmp/oomlens-fuzz.XXXXXX)"
trap 'rm -rf "$work"' EXIT

fuzz_one() {
    local target="$1" binary="$build_dir/fuzz/fuzz_$1"
    local dict=()
    [ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
    [ "$target" = case ] || [ "$target" = sidecar ] && [ -f fuzz/text.dict ] && dict=(-dict=fuzz/text.dict)
    mkdir -p "$work/$target/new" "$work/$target/artifacts" "$work/$target/replay"
    local max_len
    max_len="$(max_len_for "$target")"
    if ! "$binary" "${dict[@]}" -runs=0 -timeout=25 -rss_limit_mb=2048 -max_len="$max_len" \
        -artifact_prefix="$work/$target/replay/" "fuzz/corpus/$target" >"$work/$target/replay.log" 2>&1; then
        echo "fuzz_$target: FAILED replaying the committed seeds (a regression)" >&2
        grep -E 'ERROR|invariant broken|SUMMARY|Test unit written' "$work/$target/replay.log" | head -20 >&2
        return 1
    fi
    # New inputs go to a scratch folder; the seeds stay as committed. -seed fixes the mutation
    # sequence and -runs how far it goes (the time bound caps a slow machine); -timeout catches a
    # hang on one input.
    if nice -n 5 "$binary" "${dict[@]}" -seed=1 -runs="$(runs_for "$target")" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 \
        -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$work/$target/artifacts/" \
        "$work/$target/new" "fuzz/corpus/$target" >"$work/$target/log" 2>&1; then
        echo "fuzz_$target: ok ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/$target/log" \
            | grep -o '[0-9]*$') inputs, at most ${seconds} s)"
        return 0
    fi
    echo "fuzz_$target: FAILED: NEW FINDING (the committed seeds pass; minimize, name and commit the reproducer)" >&2
    grep -E 'ERROR|invariant broken|SUMMARY|Test unit written' "$work/$target/log" | head -20 >&2
    for artifact in "$work/$target/artifacts"/*; do
        [ -f "$artifact" ] || continue
        cp "$artifact" "fuzz/corpus/$target/$(basename "$artifact")"
        echo "  reproducer kept as fuzz/corpus/$target/$(basename "$artifact") ($(wc -c <"$artifact") bytes)" >&2
        echo "  reproducer, base64 (base64 -d > fuzz/corpus/$target/$(basename "$artifact")):" >&2
        head -c 262144 "$artifact" | base64 -w 0 >&2
        echo >&2
    done
    return 1
}

for target in "${targets[@]}"; do
    if [ ! -x "$build_dir/fuzz/fuzz_$target" ]; then
        echo "no $build_dir/fuzz/fuzz_$target: build it with cmake --preset fuzz && cmake --build --preset fuzz" >&2
        exit 2
    fi
done

echo "Fuzzing ${#targets[@]} targets, ${seconds} s each, ${jobs} at a time"
failed=0
running=0
pids=()
for target in "${targets[@]}"; do
    fuzz_one "$target" &
    pids+=($!)
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
exit "$failed"
