#!/usr/bin/env bash
# Waits for a quiet machine, then runs the main benchmarks one after the
# other, each measuring its ratios side by side in one process (or, for
# `obelisk run`, in processes run alternately), and prints the load
# average before and after each, so that every figure comes with the load
# it ran at.
#
#   bench/quiet.sh                              # wait up to 10 min for a load under 0.5 a core
#   QUIET_LOAD=1 QUIET_WAIT=1800 bench/quiet.sh # under 1 a core, waiting up to 30 min
#   QUIET_WAIT=0 bench/quiet.sh                 # at once, whatever the load: a loaded run
#   ONLY='journal|obelisk-run' bench/quiet.sh   # some of the benchmarks
#
# Knobs: QUIET_LOAD (the 1-minute load average a core to wait for, 0.5),
# QUIET_WAIT (the most seconds to wait, 600; when the load is still higher
# then, the benchmarks run anyway and the output says the run is loaded),
# ONLY (an extended regular expression over the names below; default
# all), REPS (runs of each side of `obelisk run`, 5), COUNT (-count of the
# Go benchmarks, 5). Benchmarks: runvsminimal, journal, frontend,
# obelisk-run, startup. Plans go to bench/plans/ and binaries to
# bench/bin/ (both git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

QUIET_LOAD="${QUIET_LOAD:-0.5}"
QUIET_WAIT="${QUIET_WAIT:-600}"
ONLY="${ONLY:-.}"
REPS="${REPS:-5}"
COUNT="${COUNT:-5}"

cores=$(nproc)
threshold=$(awk -v p="$QUIET_LOAD" -v c="$cores" 'BEGIN { print p * c }')
load1() { cut -d' ' -f1 /proc/loadavg; }
above() { awk -v l="$(load1)" -v t="$threshold" 'BEGIN { exit !(l >= t) }'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

waited=0
while above && ((waited < QUIET_WAIT)); do
  if ((waited % 60 == 0)); then
    echo "# waiting for a load under $threshold ($QUIET_LOAD a core, $cores cores): $(loadavg)" >&2
  fi
  sleep 5
  waited=$((waited + 5))
done
state=quiet
if above; then
  state=loaded
fi

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -sr), $cores cores, $(go version | cut -d' ' -f3), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "# $state run: load $(loadavg) (threshold $threshold after waiting ${waited}s)"

# section NAME COMMAND...: runs the command when ONLY matches NAME, between
# two lines with the load.
section() {
  local name=$1
  shift
  [[ $name =~ $ONLY ]] || return 0
  echo
  echo "## $name: load before $(loadavg)"
  "$@"
  echo "## $name: load after $(loadavg)"
}

# median prints the median of the numbers on standard input.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# obelisk_run runs the 10k layered plan from its mocks with `obelisk run`,
# journaled (in a fresh state directory) and with --no-journal, alternately,
# and prints the medians of wall and CPU (user + system) time.
obelisk_run() {
  mkdir -p bench/bin bench/plans bench/results
  go build -o bench/bin/obelisk ./cmd/obelisk
  go run ./bench/genplans -out bench/plans -only '^layered-100x100$' 2>/dev/null
  echo '{"work": {"result": 1}}' >bench/plans/layered-100x100.mocks.json
  echo '{"seed": 0}' >bench/plans/layered-100x100.input.json
  local times state_dir
  times=$(mktemp)
  state_dir=$(mktemp -d)
  for ((rep = 1; rep <= REPS; rep++)); do
    for mode in no-journal journaled; do
      local args=(run --yes --state-dir "$state_dir/$rep" bench/plans/layered-100x100.plan)
      [[ $mode == no-journal ]] && args+=(--no-journal)
      /usr/bin/time -o "$times" -a -f "$mode %e %U %S" bench/bin/obelisk "${args[@]}" >/dev/null 2>&1
    done
  done
  rm -rf "$state_dir"
  local nw nc jw jc
  nw=$(awk '$1 == "no-journal" { print $2 }' "$times" | median)
  nc=$(awk '$1 == "no-journal" { print $3 + $4 }' "$times" | median)
  jw=$(awk '$1 == "journaled" { print $2 }' "$times" | median)
  jc=$(awk '$1 == "journaled" { print $3 + $4 }' "$times" | median)
  rm -f "$times"
  echo "obelisk run layered-100x100 (mocks), medians of $REPS alternate runs:"
  echo "  --no-journal  wall ${nw}s  CPU ${nc}s"
  echo "  journaled     wall ${jw}s  CPU ${jc}s"
  awk -v nw="$nw" -v nc="$nc" -v jw="$jw" -v jc="$jc" 'BEGIN { printf "  journaled / --no-journal: wall %.2fx  CPU %.2fx\n", jw / nw, jc / nc }'
}

# startup measures the CPU time of `obelisk version` and `obelisk check
# examples/refund.plan` beside a Go hello-world: each run 20 times in a
# loop, the loops alternately, REPS times; the medians a run, less that of
# the same loop of /bin/true (the shell's fork and exec).
startup() {
  mkdir -p bench/bin
  go build -o bench/bin/obelisk ./cmd/obelisk
  local hello times
  hello=$(mktemp -d)
  printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' >"$hello/main.go"
  (cd "$hello" && GO111MODULE=off go build -o hello main.go)
  times=$(mktemp)
  local loop='for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do "$@" >/dev/null 2>&1; done; true'
  for ((rep = 1; rep <= REPS; rep++)); do
    /usr/bin/time -o "$times" -a -f "true %e %U %S" bash -c "$loop" - /bin/true
    /usr/bin/time -o "$times" -a -f "hello %e %U %S" bash -c "$loop" - "$hello/hello"
    /usr/bin/time -o "$times" -a -f "version %e %U %S" bash -c "$loop" - bench/bin/obelisk version
    /usr/bin/time -o "$times" -a -f "check %e %U %S" bash -c "$loop" - bench/bin/obelisk check examples/refund.plan
  done
  local t h c
  t=$(awk '$1 == "true" { print ($3 + $4) / 20 }' "$times" | median)
  h=$(awk -v t="$t" '$1 == "hello" { print ($3 + $4) / 20 - t }' "$times" | median)
  for what in hello version check; do
    c=$(awk -v w="$what" -v t="$t" '$1 == w { print ($3 + $4) / 20 - t }' "$times" | median)
    awk -v w="$what" -v c="$c" -v h="$h" 'BEGIN { printf "  %-8s CPU %.1f ms a run  %.1fx hello-world\n", w, c * 1000, (h > 0 ? c / h : 0) }'
  done
  rm -rf "$hello" "$times"
}

section runvsminimal go test ./vm -timeout 60m -run '^$' -bench 'RunVsMinimal' -benchtime 20x -count "$COUNT"
section journal go test ./vm/journal -timeout 60m -run '^$' -bench 'Journal' -benchtime 5x -count 3
section frontend go test ./compiler -timeout 60m -run '^$' -bench 'FrontEnd/json|DecodeJSON' -benchtime 10x -count "$COUNT"
section obelisk-run obelisk_run
section startup startup
echo
echo "# $state run ended: load $(loadavg)"
