#!/usr/bin/env bash
# A longer fuzz campaign over the network-facing targets (issue 29; the
# results are in docs/security.md, "The campaign of issue 29"). Each target
# runs for CAMPAIGN_SECONDS (600) from its committed corpus, JOBS (2) targets
# at a time, with a random seed. New inputs go to $CAMPAIGN_DIR/new/<target>,
# never to fuzz/corpus/; afterwards they are minimised against the committed
# corpus with -merge=1 into $CAMPAIGN_DIR/merged/<target> (only the inputs
# that add features are kept there, next to copies of the committed corpus),
# and of those the inputs that add edges are copied to $CAMPAIGN_DIR/add/<target>:
# the candidates for fuzz/corpus/<target>/.
#
#   scripts/fuzz-ci.sh    # with FUZZ_CI_DIR set as below: builds the package
#   FUZZ_CI_DIR=/tmp/fuzz-ci CAMPAIGN_DIR=/tmp/campaign scripts/fuzz-campaign.sh [TARGET...]
#
# Per target, $CAMPAIGN_DIR/results/<target> records the seed, the seconds,
# the executions, libFuzzer's final cov/ft, the corpus before, the new inputs
# and those the merge kept; a crash, leak, timeout or OOM leaves the input in
# $CAMPAIGN_DIR/artifacts/<target>/.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz_dir="${FUZZ_CI_DIR:-$root/target/fuzz-ci}/fuzz"
out="${CAMPAIGN_DIR:-$root/target/fuzz-campaign}"
seconds="${CAMPAIGN_SECONDS:-600}"
jobs="${JOBS:-2}"
export RUSTC_BOOTSTRAP=1

targets=("$@")
if [[ ${#targets[@]} == 0 ]]; then
    targets=(
        ntp_server_handle ntp_server_handle_batch ntp_client_response
        ntp_client_interleaved ntp_upstream_reply
        nts_server_handle nts_server_batch nts_cookie_open nts_extension_fields
        nts_client_response
        ntske_server_request ntske_client_response ntske_records
        ntske_balancer_request ntske_pool_member_request ntske_pool_backend_response
        roughtime_message roughtime_server_batch
        tesla_packet_parsing tesla_receiver_handle tesla_bootstrap_parsing
    )
fi

bin="$fuzz_dir/target/x86_64-unknown-linux-gnu/release"
mkdir -p "$out"/{new,merged,artifacts,logs,results}
cd "$root/fuzz"

run_one() {
    local t="$1"
    local seed=$(((RANDOM << 15) | RANDOM))
    local new="$out/new/$t" merged="$out/merged/$t" log="$out/logs/$t.log"
    rm -rf "$new" "$merged"
    mkdir -p "$new" "$merged" "$out/artifacts/$t" "corpus/$t"
    local before
    before=$(find "corpus/$t" -type f | wc -l)
    local dirs=("$new" "corpus/$t")
    [[ -d "seeds/$t" ]] && dirs+=("seeds/$t")
    local started
    started=$(date +%s)
    nice -n 19 cargo fuzz run --fuzz-dir "$fuzz_dir" "$t" "${dirs[@]}" -- \
        -max_total_time="$seconds" -seed="$seed" -timeout=10 -rss_limit_mb=2048 \
        -max_len=4096 -print_final_stats=1 -artifact_prefix="$out/artifacts/$t/" \
        2>"$log"
    local rc=$?
    local ended
    ended=$(date +%s)
    # Minimise: the committed corpus first, then only the new inputs that
    # add features to it.
    cp "corpus/$t"/. "$merged"/ -r 2>/dev/null
    [[ -d "seeds/$t" ]] && cp -r "seeds/$t"/. "$merged"/
    nice -n 19 "$bin/$t" -merge=1 -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        "$merged" "$new" 2>"$out/logs/$t.merge.log"
    local kept=0
    for f in "$merged"/*; do
        b="$(basename "$f")"
        [[ -e "corpus/$t/$b" || -e "seeds/$t/$b" ]] || kept=$((kept + 1))
    done
    # Of those, the seeds to commit: the inputs that add edges (not hit
    # counts), in $out/add/<target>.
    local edges="$out/edges/$t" add="$out/add/$t"
    rm -rf "$edges" "$add"
    mkdir -p "$edges" "$add"
    cp -r "corpus/$t"/. "$edges"/ 2>/dev/null
    nice -n 19 "$bin/$t" -merge=1 -use_counters=0 -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 "$edges" "$merged" 2>"$out/logs/$t.edges.log"
    for f in "$edges"/*; do
        [[ -e "corpus/$t/$(basename "$f")" ]] || cp "$f" "$add"/
    done
    {
        echo "target=$t"
        echo "seed=$seed"
        echo "exit=$rc"
        echo "seconds=$((ended - started))"
        grep -E '^stat::number_of_executed_units' "$log" | sed 's/^stat::number_of_executed_units: */executions=/'
        grep -E 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 | sed 's/^/final=/'
        echo "corpus_before=$before"
        echo "new_inputs=$(find "$new" -type f | wc -l)"
        echo "merge_kept=$kept"
        echo "edges_kept=$(find "$add" -type f | wc -l)"
        echo "artifacts=$(find "$out/artifacts/$t" -type f | wc -l)"
    } >"$out/results/$t"
    echo "fuzz-campaign: $t done: $(tr '\n' ' ' <"$out/results/$t")" >&2
}

for t in "${targets[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs)); do
        wait -n
    done
    echo "fuzz-campaign: $(date -u +%T) starting $t" >&2
    run_one "$t" &
done
wait
echo "fuzz-campaign: $(date -u +%T) all done" >&2
