#!/bin/sh
# The accuracy matrix on the plugin's own JSON-lines files (ns times: slow
# links are checked too). Each job runs in the emulator with
# PROXYTRACE_DUMP_DIR, a 50 ms stall watchdog and a hung job held 0.3 s (so
# every rank dumps while it hangs, as each process of a real job would when
# its own ops stop) — a job that completes leaves its finalize records —;
# then `proxytrace analyze --expect`
# compares the verdict from those files with the emulator's ground truth.
# Hosts rccl, nccl-2.30 and nccl-2.28; 2 x 4, 4 x 1 and 3 x 2 ranks; stall
# (leaving rank, entering rank, every channel), no-recv (all-reduce and
# send/recv), slow-link (16 times slower: the emulator's NVIDIA profiles
# stretch an op less than its factor), PXN with a stall, and none. --kill is left out: all
# emulated ranks share one process, so a "dead" rank's plugin keeps writing
# its files, which a dead process would not (test_accuracy covers kill on the
# logger's dumps). Every job runs on emulated time: its files, and so its
# verdict, are the same on every run and in every build, sanitizers and
# qemu included, so one run of each says it. A plugin that writes no dump
# files is reported, not failed; a completing job whose periodic dumps
# missed some ranks reads "incomplete" (nothing found in what was read), which
# is counted, not failed, for a healthy or a slow job (the
# analysis says what it could not see). $1: the build folder.
B=${1:-build}
PT="$(cd "$B" && pwd)/proxytrace"
RUN=${PROXYTRACE_EMULATOR:-}
PLUGIN="$(cd "$B" && pwd)/librccl-profiler-proxytrace.so"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0; exact=0; node=0; limit=0; incomplete=0; differ=0; nodump=0
for host in rccl nccl-2.30 nccl-2.28; do
  for topo in "2 4" "4 1" "3 2"; do
    set -- $topo
    last=$(( ($1 - 1) * $2 ))
    for fault in "" "--stall $(($2 - 1)):0:5" "--stall 0:0:3" "--stall $last:all:2" "--no-recv 0:0:3" \
                 "--no-recv $last --fault-call 1" "--slow-link $last:16" "--pxn $(($2 - 1)):0 --stall $(($2 - 1)):0:5"; do
      case "$fault" in *pxn*) [ "$2" -lt 2 ] && continue ;; esac
      d="$T/run$n"
      mkdir -p "$d"
      # A job that completes leaves its finalize records (with the last
      # completed ops) under every host; a slow link runs paced (the
      # emulator's default for timing faults), so its ops last what the
      # fault makes them.
      extra=""
      # a slow link is timed in emulated time, with enough operations for
      # the slow-edge judgement (docs/analyze.md)
      case "$fault" in *slow-link*) extra="--poll-us 100 --iters 6" ;; esac
      run_job() {
        rm -rf "$d/files"
        $RUN "$PT" sim --host "$host" --plugin "$PLUGIN" --nodes "$1" --ranks-per-node "$2" --channels 2 --iters 4 \
          $fault --env PROXYTRACE_DUMP_DIR="$d/files" --env PROXYTRACE_STALL_MS=50 --hold 0.3 $extra \
          --truth-json "$d/truth.json" --quiet >"$d/sim.out" 2>&1
      }
      run_job "$@"
      if [ ! -d "$d/files" ]; then
        if [ $n -eq 0 ]; then
          echo "this plugin writes no dump files (PROXYTRACE_DUMP_DIR): nothing to check"
          exit 0
        fi
        # a job that completed before any trigger fired leaves no dump
        grep -q '"verdict":"hang"' "$d/truth.json" && { echo "DIFFERS: $host $topo $fault: a hung job left no dump"; differ=$((differ + 1)); }
        nodump=$((nodump + 1)); n=$((n + 1)); rm -rf "$d"; continue
      fi
      # emulated time: the same files on every run, so one run says it
      $RUN "$PT" analyze --expect "$d/truth.json" "$d/files" >"$d/analyze.out" 2>&1
      verdict=$(tail -n 1 "$d/analyze.out")
      case "$verdict" in
        *"agrees with the ground truth at node level"*) node=$((node + 1)) ;;
        *"agrees with the ground truth"*) exact=$((exact + 1)) ;;
        *"millisecond times only"*|*"documented limit"*) limit=$((limit + 1)) ;;
        # a completing job that the periodic timer did not dump on every
        # rank: the analysis says what it could not see, which is no error
        *"the verdict is incomplete, the ground truth says ok"*|*"the verdict is incomplete, the ground truth says slow"*) incomplete=$((incomplete + 1)) ;;
        *) differ=$((differ + 1)); echo "DIFFERS: $host $topo $fault"; sed 's/^/  | /' "$d/analyze.out" | head -12 ;;
      esac
      n=$((n + 1))
      rm -rf "$d"
    done
  done
done
echo "JSON files: $n jobs, $exact exact, $node at node level, $limit within a documented limit, $differ differ;" \
  "$nodump completed before any dump, $incomplete completed with dumps of only some ranks (incomplete)"
[ $differ -eq 0 ]
