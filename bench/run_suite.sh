#!/usr/bin/env bash
# The performance suite, graft vs LibTorch side by side: per-op overhead and heap allocations per op
# (overhead.cpp), kernel throughput, matmul (also against cblas_sgemm), conv2d, optimiser steps and
# clipping (kernels.cpp), the training steps with their peak memory (train_step.cpp), the
# sequence models, a GPT-style Transformer's training step at widths 512 and 1024 and contexts
# 128 and 512, a Transformer encoder layer (also with attention's core recomputed), an LSTM
# (seq_models.cpp), and data parallelism on 2 ranks against two independent processes, the
# library's DDP step (ddp_step.cpp) and `mpirun graft train` (the graft command). Each
# program is one source in LibTorch's spelling, built as torch_<name> (LibTorch only) and, ported
# by tools/port-from-libtorch.sh, as graft_<name> (bench/CMakeLists.txt). Every measurement runs one
# library in a process of its own; the two executables run alternately (which goes first alternates
# from round to round), and the ratios come from the medians of the same run.
#
# The standalone check (issue 16): the LibTorch executables also run on their own, with no graft
# process in the pair (STANDALONE_ROUNDS processes per case group, TRAIN_STANDALONE_REPS per
# training configuration), spread evenly among the alternating rounds (standalone_due below).
# bench/suite_report.py refuses a ratio (the row shows "refused", the script exits 3) when the
# suite's LibTorch median is more than 10% slower than that standalone one.
#
# Rewrites the results between <!-- suite-results:begin --> and <!-- suite-results:end --> in
# BENCHMARKS.md (the one results block there) and the chart bench/suite_ratios.svg.
# Usage: bench/run_suite.sh   (from anywhere; about 35 minutes on 2 cores, the build excluded)
#
# Time by part on the 2-core AMD EPYC machine (estimates; every part prints its date stamps and
# seconds, and the report's context lists them): overhead, kernels and train about 10 minutes
# together, seq about 18 (the GPT cases 14 of them: width 1024 at context 512 takes about 13 s a
# step at 1 thread, so those processes take 2 timed steps after the warm-up), ddp about 4.
#
# Knobs (environment): BUILD_DIR (default build-bench), JOBS (build jobs, default 2), ROUNDS
# (alternating processes per library for overhead and kernels, default 3), STANDALONE_ROUNDS
# (default 3), OVERHEAD_REPS (Google Benchmark repetitions per process, default 3), KERNEL_REPS
# (timed blocks per case per process, default 3), TRAIN_REPS (timing processes per library and
# configuration, default 9), TRAIN_STANDALONE_REPS (default 3), MEM_REPS (default 3), THREADS
# (kernel cases, default "1,2"), CNN_OPENBLAS_THREADS (OPENBLAS_NUM_THREADS for the CNN step at 2
# threads, default 1), SEQ_ROUNDS (alternating processes per library and sequence case, default 3),
# SEQ_STANDALONE (standalone LibTorch processes per sequence case, default 1), SEQ_STEPS (timed
# steps of the GPT at context 128, default 3), SEQ_LONG_STEPS (at context 512, default 2),
# SEQ_SMALL_STEPS (encoder and LSTM, default 4), SEQ_CASES (the sequence cases, space-separated, as
# "gpt-w512-t128-th1 encoder-th2 encoder_rc-th1 lstm-th1": a shorter list for a quick run; default
# every case), DDP_ROUNDS (default 3), DDP_STEP_STEPS (timed steps per DDP-step process, default
# 100), DDP_STEP_MODELS (default mlp,cnn), DDP_TRAIN_MODELS (graft train's, default mlp,cnn,gpt),
# CORETYPE (OpenBLAS family for both libraries, default SkylakeX with AVX-512, else Zen or Haswell; below), DDP_TRAIN_LIMIT
# (--train-limit of each independent graft train process, the 2-rank run twice
# that; default per model, below), DDP_MPIRUN_FLAGS (default --oversubscribe), NO_UPDATE=1 (print
# only), SKIP=overhead,kernels,train,seq,ddp (reuse that part's last results from the build
# directory; "overhead" covers the allocation counts too; the GPT's efficiency rows take the
# machine's peak from the kernels part's cblas_sgemm results).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-bench}
SKIP=${SKIP:-}
ROUNDS=${ROUNDS:-3}
STANDALONE_ROUNDS=${STANDALONE_ROUNDS:-3}
OVERHEAD_REPS=${OVERHEAD_REPS:-3}
KERNEL_REPS=${KERNEL_REPS:-3}
TRAIN_REPS=${TRAIN_REPS:-9}
TRAIN_STANDALONE_REPS=${TRAIN_STANDALONE_REPS:-3}
MEM_REPS=${MEM_REPS:-3}
THREADS=${THREADS:-1,2}
SEQ_ROUNDS=${SEQ_ROUNDS:-3}
SEQ_STANDALONE=${SEQ_STANDALONE:-1}
SEQ_STEPS=${SEQ_STEPS:-3}
SEQ_LONG_STEPS=${SEQ_LONG_STEPS:-2}
SEQ_SMALL_STEPS=${SEQ_SMALL_STEPS:-4}
SEQ_CASES=${SEQ_CASES:-}
SEQ_CASES_SET=$SEQ_CASES  # a shortened list, named in the report's command line
DDP_ROUNDS=${DDP_ROUNDS:-3}
DDP_STEP_STEPS=${DDP_STEP_STEPS:-100}
DDP_STEP_MODELS=${DDP_STEP_MODELS:-mlp,cnn}
DDP_TRAIN_MODELS=${DDP_TRAIN_MODELS:-mlp,cnn,gpt}

# LibTorch's best configuration on this machine: OpenBLAS's AVX-512 "SkylakeX" kernels (0.3.21 does
# not recognise this processor by name) and OpenMP threads that sleep when idle. graft picks
# SkylakeX by itself; both libraries run under the same variables, and every process gets
# OPENBLAS_NUM_THREADS equal to its thread count (LibTorch's products run on OpenBLAS's own pool).
# On an AVX2-only processor the default is OpenBLAS's AVX2 family for it: Zen on AMD, Haswell on
# Intel. CORETYPE=Haswell (or Zen) on an AVX-512 processor runs both libraries on the AVX2 kernel
# families instead: OpenBLAS's (OPENBLAS_CORETYPE for LibTorch, GRAFT_BLAS_CORETYPE for graft) and
# oneDNN's (ONEDNN_MAX_CPU_ISA=AVX2). graft's own element-wise clones still pick AVX-512 where the
# processor has it (GCC target_clones has no switch), so that approximates an AVX2 machine.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  default_coretype=SkylakeX
elif grep -q AuthenticAMD /proc/cpuinfo 2>/dev/null; then
  default_coretype=Zen
else
  default_coretype=Haswell
fi
CORETYPE=${CORETYPE:-$default_coretype}
export OPENBLAS_CORETYPE=$CORETYPE
if [[ "$CORETYPE" != SkylakeX ]]; then
  export GRAFT_BLAS_CORETYPE=$CORETYPE ONEDNN_MAX_CPU_ISA=${ONEDNN_MAX_CPU_ISA:-AVX2}
fi
export OMP_WAIT_POLICY=passive

GRAFT_REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$ROOT" diff --quiet HEAD -- src include bench 2>/dev/null ||
  GRAFT_REV="$GRAFT_REV + uncommitted changes in src/ include/ bench/"

PROGRAMS=(overhead overhead_allocs kernels train_step seq_models)
# The graft command (target graft_app) for the ddp part's `mpirun graft train`.
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGRAFT_BUILD_BENCH=ON \
      -DGRAFT_BUILD_TESTS=OFF -DGRAFT_BUILD_EXAMPLES=OFF -DGRAFT_BUILD_APPS=ON >/dev/null
if grep -q '^Torch_DIR:PATH=.*NOTFOUND' "$BUILD/CMakeCache.txt"; then
  echo "run_suite.sh: LibTorch not found at configure time; the suite needs it (tools/install-deps.sh --bench)" >&2
  exit 2
fi
# The ddp part needs graft built with MPI (GRAFT_WITH_MPI, on when OpenMPI is installed) and mpirun.
HAVE_MPI=0
if grep -q '^GRAFT_WITH_MPI:BOOL=ON' "$BUILD/CMakeCache.txt" && command -v mpirun >/dev/null; then
  HAVE_MPI=1
  PROGRAMS+=(ddp_step)
fi
TARGETS=(graft_app)
for p in "${PROGRAMS[@]}"; do TARGETS+=("graft_$p" "torch_$p"); done
# Through the lock other builds on this machine take (harmless when nobody holds it).
flock /tmp/graft-build.lock cmake --build "$BUILD" --target "${TARGETS[@]}" -j"${JOBS:-2}"
BIN=$BUILD/bench
RUNS=$BUILD/suite  # every process's output; bench/suite_report.py reads the folder
mkdir -p "$RUNS"

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
DATE=$(date -Iseconds)

# standalone_due ROUND ROUNDS STANDALONE: whether the standalone LibTorch run goes after this round.
# The STANDALONE runs are spread evenly over the ROUNDS alternating rounds (the last round always
# gets one), so that the machine's speed, which drifts by tens of percent over minutes on this
# shared VM, is the same for the suite's LibTorch figures and the standalone ones they are checked
# against (run after all the rounds, they disagreed by up to 2x on quiet and busy minutes alike).
standalone_due() {
  local r=$1 n=$2 s=$3
  (((r * s) / n > ((r - 1) * s) / n))
}

# order ROUND A B [C]: the libraries rotated by ROUND, so that each goes first in turn.
order() {
  local r=$1
  shift
  local libs=("$@") n=$#
  for ((i = 0; i < n; ++i)); do echo "${libs[$(((i + r) % n))]}"; done
}

# part_begin NAME / part_end NAME: a date stamp on stdout, and the part's seconds in PART_TIMES.
PART_TIMES=""
part_begin() {
  PART_START=$SECONDS
  echo "=== $1 part begins $(date -Iseconds)"
}
part_end() {
  PART_TIMES+=" $1 $((SECONDS - PART_START)) s;"
  echo "=== $1 part ends $(date -Iseconds) ($((SECONDS - PART_START)) s)"
}

if [[ ",$SKIP," != *",overhead,"* ]]; then
  part_begin overhead
  rm -f "$RUNS"/overhead_*.json "$RUNS"/overhead.stderr "$RUNS"/allocs_*.json
  gb=(--threads=1 --benchmark_repetitions="$OVERHEAD_REPS" --benchmark_enable_random_interleaving=true
      --benchmark_min_time=0.3 --benchmark_out_format=json)
  echo "+ overhead: cross-check, then $ROUNDS alternating rounds of $OVERHEAD_REPS repetitions"
  for lib in graft torch; do OPENBLAS_NUM_THREADS=1 "$BIN/${lib}_overhead" --check="$RUNS/overhead_check_$lib.json" >/dev/null; done
  echo "  (and standalone LibTorch $STANDALONE_ROUNDS times, spread over the rounds)"
  for ((r = 1; r <= ROUNDS; ++r)); do
    for lib in $(order "$r" graft torch); do
      OPENBLAS_NUM_THREADS=1 "$BIN/${lib}_overhead" "${gb[@]}" --benchmark_out="$RUNS/overhead_suite_${lib}_r$r.json" \
        >/dev/null 2>>"$RUNS/overhead.stderr"
    done
    if standalone_due "$r" "$ROUNDS" "$STANDALONE_ROUNDS"; then
      OPENBLAS_NUM_THREADS=1 "$BIN/torch_overhead" "${gb[@]}" --benchmark_out="$RUNS/overhead_standalone_torch_r$r.json" \
        >/dev/null 2>>"$RUNS/overhead.stderr"
    fi
  done
  # Heap allocations per op: a second build of the same chains that counts the malloc family (never
  # used for timing).
  echo "+ overhead_allocs"
  for lib in graft torch; do OPENBLAS_NUM_THREADS=1 "$BIN/${lib}_overhead_allocs" --json="$RUNS/allocs_$lib.json" >/dev/null; done
  part_end overhead
fi

if [[ ",$SKIP," != *",kernels,"* ]]; then
  part_begin kernels
  rm -f "$RUNS"/kernels_*
  IFS=, read -r -a thread_list <<<"$THREADS"
  for t in "${thread_list[@]}"; do
    echo "+ kernels at $t thread(s): $ROUNDS alternating rounds (graft, LibTorch, cblas_sgemm) of $KERNEL_REPS repetitions, standalone LibTorch $STANDALONE_ROUNDS times among them"
    for ((r = 1; r <= ROUNDS; ++r)); do
      for lib in $(order "$r" graft torch openblas); do
        case $lib in
          openblas) cmd=("$BIN/torch_kernels" --openblas) ;;
          *) cmd=("$BIN/${lib}_kernels") ;;
        esac
        OPENBLAS_NUM_THREADS=$t "${cmd[@]}" --threads="$t" --reps="$KERNEL_REPS" \
          --json="$RUNS/kernels_suite_${lib}_t${t}_r$r.json" >"$RUNS/kernels_suite_${lib}_t${t}_r$r.log"
      done
      if standalone_due "$r" "$ROUNDS" "$STANDALONE_ROUNDS"; then
        OPENBLAS_NUM_THREADS=$t "$BIN/torch_kernels" --threads="$t" --reps="$KERNEL_REPS" \
          --json="$RUNS/kernels_standalone_torch_t${t}_r$r.json" >"$RUNS/kernels_standalone_torch_t${t}_r$r.log"
      fi
    done
  done
  part_end kernels
fi

if [[ ",$SKIP," != *",train,"* ]]; then
  part_begin train
  TRAIN=$RUNS/train_step.txt  # one RESULT line per process, prefixed with its phase and round
  : >"$TRAIN"
  # child PHASE ROUND LIB THREADS OPENBLAS_THREADS ARGS...: one process, its RESULT line appended to $TRAIN.
  child() {
    local phase=$1 round=$2 lib=$3 threads=$4 ob=$5
    shift 5
    local line
    line=$(OPENBLAS_NUM_THREADS=$ob "$BIN/${lib}_train_step" --threads="$threads" "$@" | grep '^RESULT ') || {
      echo "train_step child failed: OPENBLAS_NUM_THREADS=$ob ${lib}_train_step --threads=$threads $*" >&2
      exit 1
    }
    echo "phase=$phase round=$round openblas_threads=$ob $line" >>"$TRAIN"
  }
  # model, threads, OPENBLAS_NUM_THREADS (both libraries). The CNN step at 2 threads gets a
  # single-threaded OpenBLAS: LibTorch runs its convolutions on oneDNN's OpenMP threads and only the
  # two Linear layers on OpenBLAS, whose own threads spin for a while after each product and take
  # the cores from oneDNN's (BENCHMARKS.md, "What was wrong"); graft keeps OpenBLAS at one thread
  # whatever the variable says.
  configs=("mlp 1 1" "mlp 2 2" "cnn 1 1" "cnn 2 ${CNN_OPENBLAS_THREADS:-1}")
  echo "+ train_step: cross-check, $MEM_REPS memory rounds, $TRAIN_REPS alternating timing rounds, standalone LibTorch $TRAIN_STANDALONE_REPS times among them"
  for lib in graft torch; do
    OPENBLAS_NUM_THREADS=1 "$BIN/${lib}_train_step" --mode=check | sed -n 's/^RESULT /phase=check round=1 RESULT /p' >>"$TRAIN"
  done
  for ((r = 1; r <= MEM_REPS; ++r)); do
    for c in "${configs[@]}"; do
      read -r model t ob <<<"$c"
      for lib in graft torch; do
        child suite "$r" "$lib" "$t" "$ob" --mode=mem --model="$model" --mem_steps=20
        child suite "$r" "$lib" "$t" "$ob" --mode=base --model="$model"
      done
    done
  done
  for ((r = 1; r <= TRAIN_REPS; ++r)); do
    for c in "${configs[@]}"; do
      read -r model t ob <<<"$c"
      for lib in $(order "$r" graft torch); do child suite "$r" "$lib" "$t" "$ob" --mode=time --model="$model" --steps=20 --warmup=3; done
      if standalone_due "$r" "$TRAIN_REPS" "$TRAIN_STANDALONE_REPS"; then
        child standalone "$r" torch "$t" "$ob" --mode=time --model="$model" --steps=20 --warmup=3
      fi
    done
  done
  part_end train
fi

# ----- seq: the sequence models (bench/seq_models.cpp; issue 35, items 1 and 2) -----
# One process per case and library (its JSON line saved as seq_<phase>_<lib>_<case>_r<round>.json),
# the libraries alternating from round to round, and one standalone LibTorch process per case (by
# default), the cases' standalone runs spread over the rounds (case i's in round SEQ_ROUNDS - i mod
# SEQ_ROUNDS). A case is NAME[-w<width>][-t<context>]-th<threads>: gpt (width and context as named,
# batch 8, depth 4, 8 heads, Adam), encoder (d_model 512, T 512, batch 8), encoder_rc (the same, graft
# only, attention's core recomputed in backward: compared with graft's own encoder), lstm (2 x 512,
# T 128, batch 32). Every process runs OPENBLAS_NUM_THREADS = its threads; the program takes one
# warm-up step, then --steps timed ones. A process that fails is listed in seq_failures.txt (the
# report names it) and the run goes on.
if [[ ",$SKIP," != *",seq,"* ]]; then
  part_begin seq
  rm -f "$RUNS"/seq_*
  if [[ -z "$SEQ_CASES" ]]; then
    for th in 1 2; do
      for w in 512 1024; do for t in 128 512; do SEQ_CASES+=" gpt-w$w-t$t-th$th"; done; done
      SEQ_CASES+=" encoder-th$th encoder_rc-th$th lstm-th$th"
    done
  fi
  read -r -a seq_cases <<<"$SEQ_CASES"
  # seq_run PHASE ROUND LIB CASE: one process; its JSON line into $RUNS, or a line in seq_failures.txt.
  seq_run() {
    local phase=$1 round=$2 lib=$3 key=$4
    local name=${key%%-*} w=512 t=128 th=1 x
    local -a f args
    IFS=- read -r -a f <<<"${key#*-}"
    for x in "${f[@]}"; do
      case $x in
        th*) th=${x#th} ;;
        w*) w=${x#w} ;;
        t*) t=${x#t} ;;
      esac
    done
    case $name in
      gpt) args=(--case=gpt --width="$w" --t="$t" --batch=8 --depth=4 --heads=8
                 --steps="$((t >= 512 ? SEQ_LONG_STEPS : SEQ_STEPS))") ;;
      encoder) args=(--case=encoder --steps="$SEQ_SMALL_STEPS") ;;
      encoder_rc) args=(--case=encoder --recompute=1 --steps="$SEQ_SMALL_STEPS") ;;
      lstm) args=(--case=lstm --steps="$SEQ_SMALL_STEPS") ;;
      *) echo "run_suite.sh: unknown sequence case $key in SEQ_CASES" >&2; exit 2 ;;
    esac
    local out="$RUNS/seq_${phase}_${lib}_${key}_r$round.json"
    if OPENBLAS_NUM_THREADS=$th "$BIN/${lib}_seq_models" --threads="$th" "${args[@]}" >"$out.log" 2>&1 &&
       grep '^{' "$out.log" >"$out"; then
      rm -f "$out.log"
    else
      rm -f "$out"
      echo "${lib}_seq_models --threads=$th ${args[*]} (phase $phase, round $round) failed: $(tail -c 300 "$out.log" | tr '\n' ' ')" |
        tee -a "$RUNS/seq_failures.txt" >&2
    fi
  }
  echo "+ seq $(date -Iseconds): ${#seq_cases[@]} cases, $SEQ_ROUNDS alternating rounds, standalone LibTorch $SEQ_STANDALONE time(s) per case among them: ${seq_cases[*]}"
  for ((r = 1; r <= SEQ_ROUNDS; ++r)); do
    echo "  seq round $r $(date -Iseconds)"
    for i in "${!seq_cases[@]}"; do
      key=${seq_cases[$i]}
      if [[ $key == encoder_rc-* ]]; then
        seq_run suite "$r" graft "$key"
        continue
      fi
      for lib in $(order "$r" graft torch); do seq_run suite "$r" "$lib" "$key"; done
      if standalone_due "$(((r - 1 + i) % SEQ_ROUNDS + 1))" "$SEQ_ROUNDS" "$SEQ_STANDALONE"; then
        seq_run standalone "$r" torch "$key"
      fi
    done
  done
  part_end seq
fi

# ----- ddp: data parallelism on 2 ranks against two independent processes (issue 35, item 3) -----
# One thread per process (OPENBLAS_NUM_THREADS=1). (a) The library's DDP step (bench/ddp_step.cpp):
# `mpirun -np 2 X_ddp_step --mode=time --model=M` (each rank B/2 of the batch B: MLP 128, CNN 64)
# against two independent processes started together, each `--rows=B/2` (RESULT lines in
# ddp_step.txt). (b) `graft train` for mlp, cnn and gpt: two independent processes started together
# against `mpirun -np 2 graft train` with the same per-rank --batch-size (graft train's --batch-size
# is per rank: docs/distributed.md), and twice the --train-limit, so that each rank makes as many
# steps as each independent process (the --json lines in ddp_train_<pair|mpi>_<model>_r<round>.<i>.json;
# the report compares examples_per_second, which counts the epoch's training steps only, not the
# start-up or the evaluation; under mpirun it is the examples of all ranks over rank 0's time).
if [[ ",$SKIP," != *",ddp,"* ]]; then
  part_begin ddp
  rm -f "$RUNS"/ddp_*
  if ((HAVE_MPI == 0)); then
    echo "+ ddp: skipped, graft was built without MPI or mpirun is missing" | tee "$RUNS/ddp_skipped.txt"
  else
    if ((EUID == 0)); then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
    # OpenMPI's defaults otherwise (at 2 ranks it binds each to a core; DDP_MPIRUN_FLAGS="--bind-to
    # none --oversubscribe" lets them float as the independent processes do).
    read -r -a mpirun_flags <<<"${DDP_MPIRUN_FLAGS:---oversubscribe}"
    MPIRUN=(mpirun "${mpirun_flags[@]}" -np 2)
    # run_pair PREFIX CMD...: two copies of CMD started together, their outputs in PREFIX.0 and PREFIX.1.
    run_pair() {
      local prefix=$1 rc0=0 rc1=0 p0 p1
      shift
      "$@" >"$prefix.0" 2>"$prefix.0.stderr" &
      p0=$!
      "$@" >"$prefix.1" 2>"$prefix.1.stderr" &
      p1=$!
      wait "$p0" || rc0=$?
      wait "$p1" || rc1=$?
      ((rc0 == 0 && rc1 == 0)) && return 0
      ddp_failed "$* (two processes; exit statuses $rc0, $rc1): $(cat "$prefix".?.stderr | tail -c 300 | tr '\n' ' ')"
      return 1
    }
    # ddp_failed TEXT: a failed command, listed in ddp_failures.txt (the report names it); the run goes on.
    ddp_failed() { echo "$1" | tee -a "$RUNS/ddp_failures.txt" >&2; }
    DDP=$RUNS/ddp_step.txt
    : >"$DDP"
    IFS=, read -r -a ddp_step_models <<<"$DDP_STEP_MODELS"
    IFS=, read -r -a ddp_train_models <<<"$DDP_TRAIN_MODELS"
    echo "+ ddp $(date -Iseconds): $DDP_ROUNDS rounds; the DDP step (${ddp_step_models[*]}, both libraries, $DDP_STEP_STEPS steps) and graft train (${ddp_train_models[*]}), 2 ranks vs two independent processes"
    export OPENBLAS_NUM_THREADS=1
    for ((r = 1; r <= DDP_ROUNDS; ++r)); do
      echo "  ddp round $r $(date -Iseconds)"
      for model in "${ddp_step_models[@]}"; do
        rows=$([[ $model == mlp ]] && echo 64 || echo 32)  # half of train_step_common.h's batch
        step_args=(--mode=time --model="$model" --threads=1 --steps="$DDP_STEP_STEPS" --warmup=10)
        for lib in $(order "$r" graft torch); do
          for what in $(order "$r" mpi pair); do
            if [[ $what == mpi ]]; then
              if "${MPIRUN[@]}" "$BIN/${lib}_ddp_step" "${step_args[@]}" >"$RUNS/ddp_mpi.out" 2>&1; then
                sed -n "s/^RESULT /phase=mpi round=$r proc=0 RESULT /p" "$RUNS/ddp_mpi.out" >>"$DDP"
              else
                ddp_failed "${MPIRUN[*]} ${lib}_ddp_step ${step_args[*]}: $(tail -c 300 "$RUNS/ddp_mpi.out" | tr '\n' ' ')"
              fi
            elif run_pair "$RUNS/ddp_pair.out" "$BIN/${lib}_ddp_step" "${step_args[@]}" --rows="$rows"; then
              for i in 0 1; do sed -n "s/^RESULT /phase=pair round=$r proc=$i RESULT /p" "$RUNS/ddp_pair.out.$i" >>"$DDP"; done
            fi
          done
        done
      done
      for model in "${ddp_train_models[@]}"; do
        case $model in
          mlp) limit=30000 eval=1000 ;;  # 235 steps of 128
          cnn) limit=6400 eval=1000 ;;   # 100 steps of 64
          gpt) limit=960 eval=64 ;;      # 30 steps of 32 windows of 128 bytes (width 128, depth 2; ~13 s)
          *) echo "run_suite.sh: unknown model $model in DDP_TRAIN_MODELS" >&2; exit 2 ;;
        esac
        limit=${DDP_TRAIN_LIMIT:-$limit}
        train_args=(train --model "$model" --epochs 1 --threads 1 --seed 0 --eval-limit "$eval" --progress none --json)
        for what in $(order "$r" pair mpi); do
          out=$RUNS/ddp_train_${what}_${model}_r$r
          if [[ $what == mpi ]]; then
            if "${MPIRUN[@]}" "$BUILD/graft" "${train_args[@]}" --train-limit "$((2 * limit))" >"$out.log" 2>&1; then
              grep '^{' "$out.log" | tail -1 >"$out.0.json" || true  # none: the report leaves the row out
            else
              ddp_failed "${MPIRUN[*]} graft ${train_args[*]} --train-limit $((2 * limit)): $(tail -c 300 "$out.log" | tr '\n' ' ')"
            fi
          elif run_pair "$out.log" "$BUILD/graft" "${train_args[@]}" --train-limit "$limit"; then
            for i in 0 1; do grep '^{' "$out.log.$i" | tail -1 >"$out.$i.json" || true; done
          fi
        done
      done
    done
    rm -f "$RUNS"/ddp_pair.out* "$RUNS"/ddp_mpi.out "$RUNS"/ddp_train_*.log*
    unset OPENBLAS_NUM_THREADS
  fi
  part_end ddp
fi
echo "+ parts done $(date -Iseconds):$PART_TIMES"

MODEL=$(lscpu | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
TORCH_PKG=$(dpkg-query -W -f='${Version}' libtorch-dev 2>/dev/null || echo "(not installed)")
LIBS="$(OPENBLAS_NUM_THREADS=1 "$BIN/graft_kernels" --filter=none | head -1) / $(OPENBLAS_NUM_THREADS=1 "$BIN/torch_kernels" --filter=none | head -1)"
UPDATE=()
[[ "${NO_UPDATE:-0}" == 1 ]] || UPDATE=(--update "$ROOT/BENCHMARKS.md" --svg "$ROOT/bench/suite_ratios.svg")
python3 "$ROOT/bench/suite_report.py" --runs "$RUNS" \
  --context "- date: $DATE${SKIP:+ (results of an earlier run reused for: $SKIP)}" \
  --context "- machine: $MODEL (lscpu model name), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2 " GiB"}') RAM, $(uname -sr); load average $LOAD_START when the run started, $(cut -d' ' -f1-3 /proc/loadavg) when it ended" \
  --context "- build: graft $GRAFT_REV; $("$CXX" --version | head -1), CMAKE_BUILD_TYPE=Release (graft as a static library); LibTorch from Debian's libtorch-dev $TORCH_PKG, its executables linked to LibTorch only" \
  --context "- libraries (at 1 thread): $LIBS" \
  --context "- command: \`bench/run_suite.sh\` (ROUNDS=$ROUNDS STANDALONE_ROUNDS=$STANDALONE_ROUNDS OVERHEAD_REPS=$OVERHEAD_REPS KERNEL_REPS=$KERNEL_REPS TRAIN_REPS=$TRAIN_REPS TRAIN_STANDALONE_REPS=$TRAIN_STANDALONE_REPS MEM_REPS=$MEM_REPS THREADS=$THREADS SEQ_ROUNDS=$SEQ_ROUNDS SEQ_STANDALONE=$SEQ_STANDALONE SEQ_STEPS=$SEQ_STEPS SEQ_LONG_STEPS=$SEQ_LONG_STEPS SEQ_SMALL_STEPS=$SEQ_SMALL_STEPS DDP_ROUNDS=$DDP_ROUNDS DDP_STEP_STEPS=$DDP_STEP_STEPS CORETYPE=$CORETYPE${SEQ_CASES_SET:+ SEQ_CASES=\"$SEQ_CASES_SET\"}${DDP_TRAIN_LIMIT:+ DDP_TRAIN_LIMIT=$DDP_TRAIN_LIMIT}${DDP_MPIRUN_FLAGS:+ DDP_MPIRUN_FLAGS=\"$DDP_MPIRUN_FLAGS\"})" \
  --context "- part timings (this run; the build excluded):${PART_TIMES:- none (every part skipped)}" \
  "${UPDATE[@]}"
