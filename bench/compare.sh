#!/usr/bin/env bash
# Runs the benchmark plans through every peer (go-minimal, obelisk,
# langgraph-js), each run in a fresh process, and prints one table.
#
#   bench/compare.sh                                # everything, 3 runs each
#   PLANS='-(100|1000)$|10x10$|25x40$|^lat-' bench/compare.sh   # no 10k plans
#   PEERS='go-minimal obelisk' REPS=5 bench/compare.sh
#
# Knobs: REPS (3 runs of each plan by each peer), PLANS (an extended regular
# expression over the plan names of `go run ./bench/genplans -list`; default
# all), PEERS, WARMUP (runs in the same process before the measured one; 0
# measures a cold process), LG_MAX_STEPS (10000: langgraph-js skips larger
# plans; at 10k steps one of its runs takes minutes), TIMEOUT (seconds per
# run, 900). Raw lines go to bench/results/raw-TIME.jsonl. The first run
# installs LangGraph.js from the npm registry with `npm ci` (versions pinned
# in bench/peers/langgraph/package-lock.json); nothing else uses the network.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS="${REPS:-3}"
PLANS="${PLANS:-.}"
PEERS="${PEERS:-go-minimal obelisk langgraph-js}"
WARMUP="${WARMUP:-0}"
LG_MAX_STEPS="${LG_MAX_STEPS:-10000}"
TIMEOUT="${TIMEOUT:-900}"
export LANGCHAIN_TRACING_V2=false LANGSMITH_TRACING=false

mkdir -p bench/bin bench/results
go run ./bench/genplans -out bench/plans -only "$PLANS" 2>/dev/null
go build -o bench/bin/obelisk-peer ./bench/peers/obelisk
go build -o bench/bin/gominimal ./bench/peers/gominimal
if [[ " $PEERS " == *" langgraph-js "* && ! -d bench/peers/langgraph/node_modules ]]; then
  (cd bench/peers/langgraph && npm ci --no-audit --no-fund >&2)
fi

raw="bench/results/raw-$(date +%Y%m%d-%H%M%S).jsonl"
{
  echo "# $(uname -sr), $(nproc) cores, $(go version | cut -d' ' -f3), node $(node --version 2>/dev/null || echo none)"
  echo "# REPS=$REPS WARMUP=$WARMUP PLANS=$PLANS PEERS=$PEERS LG_MAX_STEPS=$LG_MAX_STEPS"
} >"$raw"
for plan in $(go run ./bench/genplans -list | grep -E -- "$PLANS"); do
  file="bench/plans/$plan.json"
  steps=$(sed -n 's/.*"nodes": \([0-9]*\).*/\1/p' "bench/plans/$plan.meta.json")
  for peer in $PEERS; do
    case $peer in
      go-minimal) cmd=(bench/bin/gominimal -warmup "$WARMUP" "$file") ;;
      obelisk) cmd=(bench/bin/obelisk-peer -warmup "$WARMUP" "$file") ;;
      obelisk-novalidate) cmd=(bench/bin/obelisk-peer -validate=false -warmup "$WARMUP" "$file") ;;
      langgraph-js)
        if ((steps > LG_MAX_STEPS)); then continue; fi
        cmd=(node bench/peers/langgraph/run.mjs --warmup "$WARMUP" "$file") ;;
      *) echo "unknown peer $peer" >&2; exit 2 ;;
    esac
    for ((rep = 1; rep <= REPS; rep++)); do
      echo "$plan $peer $rep/$REPS" >&2
      if ! timeout "$TIMEOUT" "${cmd[@]}" >>"$raw"; then
        echo "$plan $peer: failed or timed out" >&2
      fi
    done
  done
done
echo "raw results: $raw" >&2
go run ./bench/table <"$raw"
