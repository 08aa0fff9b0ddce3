#!/usr/bin/env bash
# The GPU machine's jobs, each run after bench/gpu.sh has set the machine up and built ksmith:
#   bash bench/gpu.sh bash bench/gpu_job.sh JOB ARGS...      (carry .deps, as for gpu.sh)
# `bash bench/gpu_job.sh` alone lists the jobs. Each writes what it measured to $OUT (default
# /tmp/ks_out), which the device tool brings back: eight files at most, so the larger results
# come back as archives. Where a job compares with PyTorch, eager (TF32 off) is timed first in
# the same call. Settings, each with its default:
#   KS_SIZES=bench/sizes_gpu.txt       the sizes of the examples named (KernelBench's)
#   KS_TUNED=bench/tuned/h100-opencl   the tuned table that tuned and arms bench
#   KS_TORCH_DEVICE=cuda PYTHON=python3  where PyTorch runs, and the python3 that has it
#   KS_ANY_DEVICE=                     set: tune and mpi take every OpenCL device, not its GPUs
#   KS_DTYPE=                          bf16 or f16: the examples' f32 tensors at that type, PyTorch
#                                      too (--dtype; search, schedules and tuned take it)
#   KS_TARGET=opencl                   spirv: gemm on Vulkan (cooperative matrices, f16: the tiles
#                                      without their async_copy)
# Here (PoCL, PyTorch on the CPU), e.g.: KS_SIZES=bench/sizes_cpu.txt KS_TORCH_DEVICE=cpu
#   PYTHON=/usr/bin/python3 OUT=/tmp/out bash bench/gpu_job.sh arms 1 30 3 gemm_divide_sum
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/ks_out}
ks=./build/ksmith
gpu_sizes=${KS_SIZES:-bench/sizes_gpu.txt}
tuned=${KS_TUNED:-bench/tuned/h100-opencl}
py=$(command -v /usr/bin/python3 || command -v python3)  # for the scripts that need no PyTorch
torch_py=${PYTHON:-python3}                               # the one with PyTorch

usage() {
  cat >&2 <<'EOF'
usage: bash bench/gpu.sh bash bench/gpu_job.sh JOB ARGS...   (results in $OUT; bench/README.md)
  tuned                                 the tuned table: eager, ksmith bench --tuned KS_TUNED, trust.sh
  evolve PART BUDGET MINUTES [NAME...]  ksmith evolve from the naive kernel (bench/evolve_gpu.sh), the bests kept
  search BUDGET MINUTES NAME...         eager, ksmith evolve from naive (KS_START_DIR), the bests beside eager
                                        (KS_SPEC_DIR, KS_PEERS, KS_SIZES: specs, peers and sizes of another folder:
                                        bench/spellings)
  gemm [SCHEDULE...]                    GEMM 4096^3 tiles (default bench/mma/) checked, fp32 and TF32 beside cuBLAS
  tune MINUTES NAME...                  ksmith tune of the examples on one GPU, then on every GPU of the host
  mpi MINUTES NAME...                   mpirun ksmith tune, a rank a GPU, on 1, 2 and 4 GPUs of the host
  bodies                                tests/bodies' honest kernel bodies at the GPU sizes beside eager
  arms PART BUDGET MINUTES [NAME...]    search arms (KS_ARMS: model as_written) from naive, their bests beside eager
  throughput MINUTES NAME...            trust.sh through ksmith run and a worker, evaluations a minute of evolve
  schedules NAME SIZES SCHEDULE...      eager, then one example's schedules side by side ("-": the naive kernel)
EOF
  exit 2
}

# ---- shared steps ---------------------------------------------------------------------------

# The lines of SIZES for the named examples, into FILE, in SIZES's order.
sizes_of() {  # FILE SIZES NAME...
  local file=$1 sizes=$2
  shift 2
  grep -E "^($(IFS='|'; echo "$*"))[[:space:]]" "$sizes" > "$file"
}

# A suite folder of the named examples' specs, their lines of SIZES in DIR/sizes.txt.
suite_of() {  # DIR SIZES NAME...
  local dir=$1 sizes=$2 name
  shift 2
  rm -rf "$dir" && mkdir -p "$dir"
  for name in "$@"; do cp "${KS_SPEC_DIR:-examples}/$name.ks" "$dir/"; done
  sizes_of "$dir/sizes.txt" "$sizes" "$@"
}

# PyTorch eager on the problems of SIZES (bench/torch_peer.py), now, into JSON; LIMIT seconds at
# most (0: no limit).
eager() {  # SIZES JSON [LIMIT]
  echo "== PyTorch eager"
  timeout "${3:-0}" "$torch_py" bench/torch_peer.py "$1" "$2" --device "${KS_TORCH_DEVICE:-cuda}" \
    --no-compile --peers "${KS_PEERS:-bench/peers}" ${KS_DTYPE:+--dtype "$KS_DTYPE"} 2>&1
}

# ksmith bench of a suite folder (NVIDIA OpenCL) with the schedules of TUNED, beside the eager
# times in JSON; LIMIT seconds at most (0: no limit).
beside_eager() {  # SUITE SIZES JSON TUNED [LIMIT]
  timeout "${5:-0}" $ks bench "$1" --sizes "$2" --peer "$3" --target opencl --tuned "$4" \
    ${KS_DTYPE:+--dtype "$KS_DTYPE"} 2>&1
}

# ksmith time of SPEC at SIZES under each SCHEDULE ("-": the naive kernel), three rounds side by
# side; OPTIONS: more of ksmith time's options (one word, split); LIMIT seconds at most (0: none).
side_by_side() {  # LIMIT SPEC SIZES OPTIONS SCHEDULE...
  local limit=$1 spec=$2 sizes=$3 options=$4 s args=()
  shift 4
  for s in "$@"; do if [[ $s == - ]]; then args+=(--naive); else args+=(--schedule "$s"); fi; done
  # shellcheck disable=SC2086
  timeout "$limit" $ks time "$spec" --size "$sizes" --rounds 3 $options "${args[@]}" 2>&1
}

# The evaluator against the cheat catalogue (bench/trust.sh) into $OUT/trust.txt; "both": through
# `ksmith run`, then through one `ksmith worker` as a search's candidates go.
trust() {  # [both]
  if [[ ${1:-} == both ]]; then
    echo "== ksmith run"; bash bench/trust.sh; echo "== ksmith worker"; KS_TRUST_WORKER=1 bash bench/trust.sh
  else
    bash bench/trust.sh
  fi 2>&1 | tee "$out/trust.txt"
}

# The OpenCL GPUs' selectors (a machine may list PoCL's CPU device first); every OpenCL device
# with KS_ANY_DEVICE set.
opencl_gpus() {
  $ks devices --json | "$py" -c '
import json, sys
any = len(sys.argv) > 1
print(" ".join(d["selector"] for d in json.load(sys.stdin) if d["api"] == "opencl" and (d["gpu"] or any)))' \
    ${KS_ANY_DEVICE:+any}
}

# One `ksmith tune` of /tmp/ks_suite into FOLDER on DEVICES, MINUTES a problem, through
# LAUNCHER (e.g. mpirun ...), its output appended to the job's $log; fresh program caches, ours
# and the driver's (NVIDIA's compute cache keeps the kernels it compiled on disk): a tuning must
# not build on another's compiles. Prints its row of tuning_header's table; wall minutes from
# start to end, the searches' final retimes and each worker's first evaluation included.
tuning_header() {
  echo "| ranks | --devices | problems | wall minutes | evaluations | a minute | tuned on |"
  echo "|---:|---|---:|---:|---:|---:|---|"
}
tuning() {  # RANKS DEVICES MINUTES FOLDER [LAUNCHER...]
  local ranks=$1 devices=$2 minutes=$3 folder=$4 start end
  shift 4
  start=$(date +%s.%N)
  KSMITH_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) "$@" $ks tune /tmp/ks_suite \
    --sizes /tmp/ks_suite/sizes.txt --out "$folder" --devices "$devices" --minutes-per-problem "$minutes" \
    --config bench/evolve_gpu.toml >> "$log" 2>&1
  echo "exit $? ($ranks ranks, --devices $devices)" >> "$log"
  end=$(date +%s.%N)
  "$py" - "$folder" "$ranks" "$devices" "$start" "$end" <<'PY'
import glob, json, sys
folder, ranks, devices, start, end = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
summaries = [json.load(open(p)) for p in glob.glob(folder + "/*.json")]
evaluations = sum(s.get("evaluations", 0) for s in summaries)
on = sorted({s.get("tuned_on", "?") for s in summaries})
minutes = (end - start) / 60
print(f"| {ranks} | {devices} | {len(summaries)} | {minutes:.2f} | {evaluations} | {evaluations / minutes:.1f} | {', '.join(on)} |")
PY
}

# ---- the jobs -------------------------------------------------------------------------------

# The tuned table (results.md, "Current numbers"): PyTorch eager on every example, then
# `ksmith bench examples --tuned KS_TUNED` beside it ($OUT/tuned-bench.txt), then trust.sh
# ($OUT/trust.txt).
job_tuned() {
  eager "$gpu_sizes" /tmp/torch.json
  beside_eager examples "$gpu_sizes" /tmp/torch.json "$tuned" | tee "$out/tuned-bench.txt"
  trust
}

# ksmith evolve on the named examples (all of KS_SIZES without names) from the naive kernel,
# BUDGET evaluations or MINUTES each (bench/evolve_gpu.sh; KS_START_DIR=DIR goes on from DIR's
# schedules), after trust.sh in PART 1; the tuned schedules and run summaries come back as
# $OUT/tuned-PART.tar.gz (to keep in bench/tuned/DEVICE), the reports and databases as
# $OUT/reports-PART.tar.gz, the evaluations' phases as $OUT/throughput-PART.md.
job_evolve() {  # PART BUDGET MINUTES [NAME...]
  local part=$1 budget=$2 minutes=$3 name
  shift 3
  [[ $part == 1 ]] && trust
  mkdir -p /tmp/ks_tuned /tmp/ks_reports
  bash bench/evolve_gpu.sh "$gpu_sizes" /tmp/ks_tuned "$budget" "$minutes" "$@" 2>&1 | tee "$out/evolve-$part.txt"
  for name in "$@"; do
    [[ -f /tmp/ks_evolve/$name/report.html ]] && cp "/tmp/ks_evolve/$name/report.html" "/tmp/ks_reports/$name.html"
    [[ -f /tmp/ks_evolve/$name/evolve.db ]] && cp "/tmp/ks_evolve/$name/evolve.db" "/tmp/ks_reports/$name.db"
  done
  "$py" bench/search/throughput.py /tmp/ks_reports/*.db > "$out/throughput-$part.md" 2>&1
  tar czf "$out/tuned-$part.tar.gz" -C /tmp ks_tuned
  tar czf "$out/reports-$part.tar.gz" -C /tmp ks_reports
}

# PyTorch eager on the named examples, then ksmith evolve on each from its naive kernel (on a
# device with matrix units the sketches draw mma.sync tiles; KS_START_DIR=DIR goes on from DIR's
# schedules), then `ksmith bench` of the bests beside eager: $OUT/search.txt, the schedules in
# $OUT/search-tuned.tar.gz.
job_search() {  # BUDGET MINUTES NAME...
  local budget=$1 minutes=$2
  shift 2
  suite_of /tmp/ks_search "$gpu_sizes" "$@"
  mkdir -p /tmp/ks_search_tuned
  {
    eager /tmp/ks_search/sizes.txt /tmp/torch.json 150
    bash bench/evolve_gpu.sh /tmp/ks_search/sizes.txt /tmp/ks_search_tuned "$budget" "$minutes" "$@"
    beside_eager /tmp/ks_search /tmp/ks_search/sizes.txt /tmp/torch.json /tmp/ks_search_tuned 200
  } 2>&1 | tee "$out/search.txt"
  tar czf "$out/search-tuned.tar.gz" -C /tmp ks_search_tuned
}

# The GEMM through tensorize (issue 46): each SCHEDULE (default bench/mma/*.sched) checked at
# N = 4096 against the float64 reference (fp32 = 3xTF32), then matmul 4096^3 side by side with
# the FFMA tile of bench/tuned/h100-opencl, in fp32 and in TF32, then cuBLAS fp32 and TF32
# through PyTorch: $OUT/gemm.txt, the first schedule's OpenCL C as $OUT/gemm.cl.
job_gemm() {  # [SCHEDULE...]
  local ffma=(bench/tuned/h100-opencl/matmul.sched) mma=("$@") s precision precisions target=()
  [[ -n ${KS_DTYPE:-} ]] && ffma=()  # an fp32 comparison: 16-bit tiles are the matrix units' (*_half.sched)
  ((${#mma[@]})) || mma=(bench/mma/*.sched)
  if [[ ${KS_TARGET:-opencl} == spirv ]]; then
    # Vulkan's cooperative matrices (f16): no cp.async there, so the tiles without their ring.
    ffma=() target=(--target spirv)
    mkdir -p /tmp/ks_gemm_spirv
    for s in "${!mma[@]}"; do
      grep -v '^async_copy' "${mma[$s]}" > "/tmp/ks_gemm_spirv/$(basename "${mma[$s]}")"
      mma[$s]=/tmp/ks_gemm_spirv/$(basename "${mma[$s]}")
    done
  fi
  {
    echo "== device"
    $ks devices | grep -i nvidia | head -2
    echo "== checks, fp32 (3xTF32); the FFMA tile last"
    for s in "${mma[@]}" "${ffma[@]}"; do
      echo "-- $s"
      timeout 120 $ks run examples/matmul.ks --schedule "$s" --size N=4096 --batches 5 ${KS_DTYPE:+--dtype "$KS_DTYPE"} \
        "${target[@]}" 2>&1 | tail -3
    done
    precisions=(fp32 tf32)
    [[ -n ${KS_DTYPE:-} ]] && precisions=(fp32)  # 16-bit operands: exact products, one precision
    for precision in "${precisions[@]}"; do
      echo "== matmul 4096^3 side by side, $precision${KS_DTYPE:+, $KS_DTYPE tensors}"
      side_by_side 200 examples/matmul.ks N=4096 "--precision=$precision${KS_DTYPE:+ --dtype=$KS_DTYPE} ${target[*]}" \
        "${ffma[@]}" "${mma[@]}" | tail -8
    done
    echo "== cuBLAS (PyTorch), ${KS_DTYPE:-fp32 and tf32}"
    if [[ -n ${KS_DTYPE:-} ]]; then
      timeout 100 "$torch_py" bench/cublas_gemm.py --dtype "$KS_DTYPE" 2>&1 | grep 4096x4096x4096
    else
      timeout 100 "$torch_py" bench/cublas_gemm.py 2>&1 | grep 4096x4096x4096
      timeout 100 "$torch_py" bench/cublas_gemm.py --tf32 2>&1 | grep 4096x4096x4096
    fi
    echo "== generated source of the first schedule"
    if ((${#target[@]})); then
      $ks compile examples/matmul.ks --schedule "${mma[0]}" --size N=4096 --target spirv --emit glsl \
        --matrix-units cooperative ${KS_DTYPE:+--dtype "$KS_DTYPE"} -o "$out/gemm.glsl"
    else
      $ks compile examples/matmul.ks --schedule "${mma[0]}" --size N=4096 --matrix-units ptx --async-copies \
        ${KS_DTYPE:+--dtype "$KS_DTYPE"} -o "$out/gemm.cl"
    fi
  } 2>&1 | tee "$out/gemm.txt"
}

# `ksmith tune` of the named examples as a suite on the first GPU, then on every GPU of the host
# (an nvidia-h100-x2 or -x4 machine), the same minutes a problem: the table in $OUT/tune.md, the
# log in $OUT/tune.log, the tuned folders in $OUT/tuned.tar.gz.
job_tune() {  # MINUTES NAME...
  local minutes=$1 gpu log=$out/tune.log
  shift
  suite_of /tmp/ks_suite "$gpu_sizes" "$@"
  rm -rf /tmp/ks_tune_one /tmp/ks_tune_all
  read -r -a gpu <<< "$(opencl_gpus)"
  {
    tuning_header
    tuning 1 "${gpu[0]}" "$minutes" /tmp/ks_tune_one
    tuning 1 all "$minutes" /tmp/ks_tune_all
    echo "(${#gpu[@]} OpenCL GPUs; $minutes minutes a problem)"
  } | tee "$out/tune.md"
  tar czf "$out/tuned.tar.gz" --exclude='*.db' -C /tmp ks_tune_one ks_tune_all 2>/dev/null
}

# `mpirun ksmith tune`, one rank a GPU, on 1, 2 and 4 GPUs of one host (nvidia-h200-x4), the
# same suite and minutes a problem: the table in $OUT/mpi.md, the logs in $OUT/mpi.log. Each
# tuning is cut off well past its expected time (the problems' minutes over the ranks, plus a
# minute), so that the rows so far come back whatever happens. (On PoCL, a check of the job:
# KS_SIZES=bench/sizes_cpu.txt KS_ANY_DEVICE=1 POCL_DEVICES="pthread pthread pthread pthread".)
mpi_tuning() {  # RANKS DEVICES MINUTES PROBLEMS
  tuning "$1" "$2" "$3" "/tmp/ks_mpi_$1" timeout "$("$py" -c "print(int($4 * $3 * 60 * 1.6 / $1 + 60))")" \
    mpirun --oversubscribe -np "$1" -x KSMITH_CACHE_DIR -x CUDA_CACHE_PATH -x LD_LIBRARY_PATH -x VK_DRIVER_FILES
}
job_mpi() {  # MINUTES NAME...
  local minutes=$1 gpu four=all log=$out/mpi.log
  shift
  grep "MPI:" build-gpu/CMakeCache.txt "$out/configure.log" 2>/dev/null | head -3
  suite_of /tmp/ks_suite "$gpu_sizes" "$@"
  rm -rf /tmp/ks_mpi_*
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  read -r -a gpu <<< "$(opencl_gpus)"
  {
    tuning_header
    mpi_tuning 1 "${gpu[0]}" "$minutes" $#
    ((${#gpu[@]} >= 2)) && mpi_tuning 2 "${gpu[0]},${gpu[1]}" "$minutes" $#
    if ((${#gpu[@]} >= 4)); then
      [[ -n ${KS_ANY_DEVICE:-} ]] && four="${gpu[0]},${gpu[1]},${gpu[2]},${gpu[3]}"  # all: every GPU
      mpi_tuning 4 "$four" "$minutes" $#
    fi
    echo "(${#gpu[@]} OpenCL GPUs: ${gpu[*]}; $minutes minutes a problem; $(nvidia-smi -L 2>/dev/null | head -1))"
  } | tee "$out/mpi.md"
  tail -30 "$log"
}

# Every honest body of tests/bodies/ run by `ksmith run --kernel` on NVIDIA's OpenCL at the GPU
# sizes, PyTorch eager on the same problems: the table in $OUT/bodies.md.
job_bodies() {
  local body spec sizes name
  mkdir -p /tmp/ks_bodies
  : > /tmp/ks_bodies/sizes.txt
  for body in tests/bodies/*.cl; do
    grep -q '^// expect: accepted' "$body" || continue
    spec=$(sed -n 's|^// spec: ||p' "$body")
    sizes=$(awk -v s="$spec" '$1 == s {print $2}' "$gpu_sizes")
    grep -q "^$spec " /tmp/ks_bodies/sizes.txt || echo "$spec $sizes" >> /tmp/ks_bodies/sizes.txt
    name=$(basename "$body" .cl)
    timeout 60 $ks run "examples/$spec.ks" --kernel "$body" ${sizes:+--size "$sizes"} --device nvidia \
      --json > "/tmp/ks_bodies/$name.json" 2> "/tmp/ks_bodies/$name.err"
    echo "$name: exit $?"
  done
  eager /tmp/ks_bodies/sizes.txt /tmp/ks_bodies/torch.json
  "$py" - <<'PY' | tee "$out/bodies.md"
import glob, json, os
torch = json.load(open("/tmp/ks_bodies/torch.json")) if os.path.exists("/tmp/ks_bodies/torch.json") else {}
peer = torch.get("problems", {})
print("| body | spec at sizes | verdict | body ms | naive ms | over naive | eager ms | vs eager |")
print("|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob("/tmp/ks_bodies/*.json")):
    name = os.path.basename(path)[:-5]
    if name == "torch":
        continue
    try:
        r = json.load(open(path))
    except Exception:
        err = open(path[:-5] + ".err").read().strip().splitlines()
        print("| %s | | %s | | | | | |" % (name, (err[-1] if err else "no output")[:120]))
        continue
    t = r.get("time", {})
    spec = r.get("kernel", "")
    eager = peer.get(spec, {}).get("median_ms")
    ms = t.get("median_ms")
    print("| %s | %s %s | %s | %s | %s | %s | %s | %s |" % (
        name, spec, t.get("sizes", ""), r.get("verdict", "")[:100],
        "%.4g" % ms if ms else "", "%.4g" % t["baseline_ms"] if t.get("baseline_ms") else "",
        "%.2fx" % t["speedup"] if t.get("speedup") else "", "%.4g" % eager if eager else "",
        "%.2fx" % (eager / ms) if eager and ms else ""))
PY
}

# Search arms compared (bench/search/arms.sh): PyTorch eager on the named examples first, then
# for each arm of KS_ARMS (default "model as_written": the search, and the same search on the
# graph as written) ksmith evolve from the naive kernel with bench/evolve_gpu.toml, seed KS_SEED
# (default 1), BUDGET evaluations or MINUTES each (0: no limit; bench/search/run_arm.sh, whose
# KS_PRIOR_DIR is honoured), then `ksmith bench` of the examples with the arm's bests beside
# eager, and of KS_BENCH's examples with their schedules in KS_TUNED. Runs finished in an earlier
# call on the same machine are kept. $OUT/arms-PART.txt: the log and the tables; with two arms
# or more, the first two compared (bench/search/compare_search.py) in $OUT/compare-PART.md;
# $OUT/arms-PART.tar.gz: the runs' databases, reports and bests. The cost model against the
# unranked search: KS_ARMS="model mutator" ... arms PART BUDGET 0 NAME...; one arm alone, its
# runs to become a prior: KS_ARMS=ARM KS_SEED=SEED.
job_arms() {  # PART BUDGET MINUTES [NAME...]
  local part=$1 budget=$2 minutes=$3 seed=${KS_SEED:-1} work=/tmp/ks_arms arm name
  shift 3
  # shellcheck disable=SC2206  # the lists split at spaces
  local arms=(${KS_ARMS:-model as_written}) bench=("$@" ${KS_BENCH:-})
  suite_of "$work/suite" "$gpu_sizes" "${bench[@]}"
  {
    eager "$work/suite/sizes.txt" "$work/torch.json"
    for arm in "${arms[@]}"; do
      # (no names: nothing searched, the kept schedules benched)
      (($#)) && KS_EVOLVE_FLAGS="--config bench/evolve_gpu.toml" bash bench/search/run_arm.sh \
        "$work/suite/sizes.txt" "$work/runs" "$arm" "$seed" "$budget" "$minutes" "$@"
      mkdir -p "$work/tuned-$arm"
      for name in "${bench[@]}"; do
        [[ -f $tuned/$name.sched ]] && cp "$tuned/$name.sched" "$work/tuned-$arm/"
      done
      for name in "$@"; do
        [[ -f $work/runs/$name-$arm-s$seed/best.sched ]] && cp "$work/runs/$name-$arm-s$seed/best.sched" \
          "$work/tuned-$arm/$name.sched"
      done
      echo "== ksmith bench, $arm's best schedules, beside PyTorch eager"
      beside_eager "$work/suite" "$work/suite/sizes.txt" "$work/torch.json" "$work/tuned-$arm"
    done
    if ((${#arms[@]} >= 2 && $#)); then
      "$py" bench/search/compare_search.py "$work/runs" "${arms[0]}" "${arms[1]}" 2>&1 | tee "$out/compare-$part.md"
    fi
  } 2>&1 | tee "$out/arms-$part.txt"
  tar czf "$out/arms-$part.tar.gz" -C "$work" runs "${arms[@]/#/tuned-}" torch.json suite/sizes.txt 2>/dev/null ||
    tar czf "$out/arms-$part.tar.gz" -C "$work" .
}

# Issue 33's measure: trust.sh through `ksmith run` and through one `ksmith worker` (unless
# KS_SKIP_TRUST is set), then bench/search/throughput.sh on the named examples, MINUTES each:
# evaluations a minute and where an evaluation's time goes, in $OUT/throughput.md, the
# databases in $OUT/throughput_dbs.tar.gz.
job_throughput() {  # MINUTES NAME...
  local minutes=$1
  shift
  [[ -z ${KS_SKIP_TRUST:-} ]] && trust both
  bash bench/search/throughput.sh "$gpu_sizes" "$minutes" "$@" 2>&1 | tee "$out/throughput.md"
  tar czf "$out/throughput_dbs.tar.gz" -C /tmp ks_throughput 2>/dev/null
}

# For tuning by hand: PyTorch eager on one example at SIZES, then `ksmith time` of its
# schedules side by side, three rounds ("-": the naive kernel): $OUT/schedules-NAME.txt.
job_schedules() {  # NAME SIZES SCHEDULE...
  local name=$1 sizes=$2
  shift 2
  printf '%s %s\n' "$name" "$sizes" > /tmp/ks_schedules_sizes.txt
  {
    eager /tmp/ks_schedules_sizes.txt /tmp/ks_schedules_torch.json
    side_by_side 0 "examples/$name.ks" "$sizes" "${KS_DTYPE:+--dtype=$KS_DTYPE}" "$@"
  } 2>&1 | tee "$out/schedules-$name.txt"
}

# ---- which job --------------------------------------------------------------------------------
job=${1:-}
case $job in
  tuned | gemm | bodies) least=0 ;;
  tune | mpi | throughput) least=2 ;;
  evolve | search | arms | schedules) least=3 ;;
  *) usage ;;
esac
shift
(($# >= least)) || usage
mkdir -p "$out"
"job_$job" "$@"
