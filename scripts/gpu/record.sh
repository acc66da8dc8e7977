#!/usr/bin/env bash
# Records real GPU outputs for issue 31 on a machine with an NVIDIA GPU, in one run of about
# five minutes: the machine's facts (nvidia-smi as reprospec's harness calls it, ldconfig -p,
# the tools' versions), real CUDA faults (torch's device-side assert, a Triton kernel's
# illegal memory access in a forward and in a backward, planted bugs in a small CUDA C++
# program) plain, with CUDA_LAUNCH_BLOCKING=1, with a CUDA core dump read back by cuda-gdb,
# and under each compute-sanitizer tool; NCCL_DEBUG and the NCCL flight recorder (its dump,
# and its dump when the watchdog times out a collective); two ranks on one GPU; and
# reprospec itself (doctor, env, device: cuda specs, --gpus slots).
#
#   bash scripts/gpu/record.sh            (run from anywhere; OUT defaults to /tmp/gpu-out)
#
# The device has no jsonschema (and no network): carry its wheels for Python 3.12 in an ignored
# `.whl/` folder (`echo /.whl/ >> .git/info/exclude`), made here with
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_17_x86_64 -d .whl jsonschema==4.26.0 \
#     jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
# and install them first on the device:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#     --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
#
# Everything goes to $WORK/gpu/<step>.{out,err,rc,secs} (plus the files a step writes), then
# into $OUT/gpu.tar.gz, with $OUT/summary.txt listing every step, its exit status, seconds and
# the last line of its stderr. Every step is independent (one that fails or hangs costs only
# its own timeout), and no step starts after GPU_RECORD_BUDGET seconds (default 330), so the
# whole script ends within about that. Three lanes run side by side: the CUDA faults and core
# dumps, compute-sanitizer, and NCCL + reprospec; GPU_RECORD_SERIAL=1 runs them one after
# another instead (slower; for a rerun if lanes disturbed each other).
set +e
cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
HERE=$REPO/scripts/gpu
OUT=${OUT:-/tmp/gpu-out}
WORK=${GPU_RECORD_WORK:-/tmp/gpu-record}
G=$WORK/gpu
CORES=$WORK/cores
BUDGET=${GPU_RECORD_BUDGET:-330}
rm -rf "$WORK"
mkdir -p "$G" "$CORES" "$OUT" "$G/coredump" "$G/nccl" "$G/reprospec"
START=$(date +%s)
export PYTHONUNBUFFERED=1
# reprospec runs from the checkout (no install); wheels carried for it are on PYTHONPATH already.
RPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
HARNESS=$(dirname "$(find "$REPO/reprospec" -path '*reprospec_harness/envinfo.py' | head -1)")
HARNESS=$(dirname "$HARNESS")

elapsed() { echo $(($(date +%s) - START)); }

# step LANE NAME LIMIT CMD...: CMD's stdout, stderr, exit status and seconds into $G/NAME.*
step() {
    local lane=$1 name=$2 limit=$3
    shift 3
    local left=$((BUDGET - $(elapsed)))
    if ((left < 8)); then
        echo skipped >"$G/$name.rc"
        printf '%-40s skipped (budget spent at %ss)\n' "$name" "$(elapsed)" >>"$WORK/lane-$lane.txt"
        return
    fi
    ((limit > left)) && limit=$left
    local t0 t1 rc last
    t0=$(date +%s.%N)
    timeout -k 5 "$limit" "$@" >"$G/$name.out" 2>"$G/$name.err" </dev/null
    rc=$?
    t1=$(date +%s.%N)
    echo "$rc" >"$G/$name.rc"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' >"$G/$name.secs"
    last=$(grep -v '^[[:space:]]*$' "$G/$name.err" | tail -1 | cut -c1-150)
    [ -z "$last" ] && last="(stdout) $(grep -v '^[[:space:]]*$' "$G/$name.out" | tail -1 | cut -c1-140)"
    printf '%-40s rc=%-4s %7ss (limit %ss, at %ss) %s\n' "$name" "$rc" "$(cat "$G/$name.secs")" \
        "$limit" "$(elapsed)" "$last" >>"$WORK/lane-$lane.txt"
}

# cudagdb NAME: reads the GPU core written by step NAME (if any) with cuda-gdb, batch mode.
cudagdb() {
    local lane=$1 name=$2 core
    core=$(ls "$CORES/$name".* 2>/dev/null | head -1)
    ls -l "$CORES" >"$G/coredump/$name.ls" 2>&1
    if [ -z "$core" ]; then
        printf '%-40s no core written\n' "$name.cudagdb" >>"$WORK/lane-$lane.txt"
        return
    fi
    step "$lane" "$name.cudagdb" 60 cuda-gdb -batch -nx \
        -ex 'set pagination off' -ex 'set confirm off' -ex 'set width 0' \
        -ex "target cudacore $core" \
        -ex 'info cuda devices' -ex 'info cuda kernels' -ex 'info cuda blocks' \
        -ex 'info cuda warps' -ex 'info cuda lanes' -ex 'bt' -ex 'info frame' \
        -ex 'x/6i $pc - 32' -ex 'info registers $pc' -ex 'info cuda contexts'
    # Small cores travel as fixtures; big ones are only listed (the .ls file).
    if [ "$(stat -c %s "$core")" -le 3000000 ]; then
        cp "$core" "$G/coredump/"
    fi
}

# The lightweight core (no memory contents, no unrelocated ELF images), as vLLM's write-up uses.
LIGHT=skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory
LIGHT=$LIGHT,skip_constbank_memory
COREDUMP_ENV=(
    CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1
    CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0
    CUDA_COREDUMP_SHOW_PROGRESS=1
    "CUDA_COREDUMP_GENERATION_FLAGS=$LIGHT"
)

facts() {
    local q
    q=$(PYTHONPATH=$HARNESS python3 -c \
        'from reprospec_harness.envinfo import GPU_FIELDS; print(",".join(GPU_FIELDS))' 2>/dev/null)
    [ -z "$q" ] && q=index,name,driver_version,memory.total,compute_cap
    echo "$q" >"$G/query_gpu_fields.txt"
    step F uname 10 bash -c 'uname -a; cat /etc/os-release; date -u; nproc; free -m; id;
        echo "core_pattern: $(cat /proc/sys/kernel/core_pattern)"; ulimit -a;
        cat /proc/driver/nvidia/version; ls -l /dev/nvidia*; df -h /tmp /dev/shm;
        for t in gdb cuda-gdb compute-sanitizer nvcc cc gcc g++ ncu nsys; do
            echo "which $t: $(command -v $t)"; done
        env | grep -E "^(CUDA|NCCL|TORCH|NVIDIA|LD_LIBRARY|PYTHON|PATH)" | sort'
    step F nvidia-smi 20 nvidia-smi
    step F nvidia-smi-L 20 nvidia-smi -L
    step F nvidia-smi-query 20 nvidia-smi "--query-gpu=$q" --format=csv,noheader
    step F nvidia-smi-query-header 20 nvidia-smi "--query-gpu=$q" --format=csv
    step F nvidia-smi-qx 30 nvidia-smi -q -x
    step F nvidia-smi-q 30 nvidia-smi -q
    step F ldconfig 20 ldconfig -p
    grep -Ei 'cuda|cudnn|nccl|cublas|nvrtc|nvidia|cufft|curand|cusparse|cusolver|nvjitlink' \
        "$G/ldconfig.out" >"$G/ldconfig-cuda.txt" 2>&1
    step F sanitizer-version 20 compute-sanitizer --version
    step F sanitizer-help 20 compute-sanitizer --help
    step F cuda-gdb-version 30 cuda-gdb --version
    step F nvcc-version 20 nvcc --version
    step F torch-facts 60 python3 -c '
import torch, sys, platform
print("python", sys.version.replace("\n", " "), platform.machine())
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
print("available", torch.cuda.is_available(), "count", torch.cuda.device_count())
try:
    print("nccl", torch.cuda.nccl.version())
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, "capability", f"{p.major}.{p.minor}", "sms", p.multi_processor_count, "mem", p.total_memory)
    print("arch_list", torch.cuda.get_arch_list())
except Exception as e:
    print("cuda facts failed:", type(e).__name__, e)
import importlib.metadata as m
for n in ("triton", "cupy-cuda13x", "numpy", "pyyaml", "jinja2", "rich", "regex", "packaging",
          "psutil", "attrs", "typing_extensions", "jsonschema", "referencing", "rpds-py",
          "jsonschema-specifications", "uv", "pip", "nvidia-nccl-cu13", "nvidia-cuda-runtime"):
    try: print("pkg", n, m.version(n))
    except Exception as e: print("pkg", n, "missing", type(e).__name__)
'
}

lane_faults() {
    local L=A m
    step $L build-kernels 90 nvcc -lineinfo -gencode arch=compute_90,code=sm_90 \
        -o "$WORK/kernels" "$HERE/kernels.cu"
    touch "$WORK/kernels.done"
    # The torch programs first plain, then blocking, then with a GPU core dump.
    for m in assert triton backward; do
        step $L "plain.$m" 90 python3 "$HERE/fault.py" "$m"
    done
    for m in assert triton backward; do
        step $L "blocking.$m" 90 env CUDA_LAUNCH_BLOCKING=1 python3 "$HERE/fault.py" "$m"
    done
    for m in triton assert backward; do
        step $L "coredump.$m" 120 env "${COREDUMP_ENV[@]}" \
            "CUDA_COREDUMP_FILE=$CORES/coredump.$m.%p.%h.nvcudmp" python3 "$HERE/fault.py" "$m"
        cudagdb $L "coredump.$m"
    done
    # skip_abort: the driver does not abort() the process once the GPU core is written, so
    # the program sees the CUDA error itself (compare rc and stderr with coredump.triton).
    step $L coredump.triton-skipabort 120 env "${COREDUMP_ENV[@]}" \
        "CUDA_COREDUMP_GENERATION_FLAGS=$LIGHT,skip_abort" \
        "CUDA_COREDUMP_FILE=$CORES/coredump.triton-skipabort.%p.%h.nvcudmp" \
        python3 "$HERE/fault.py" triton
    ls -l "$CORES" >"$G/coredump/coredump.triton-skipabort.ls" 2>&1
    step $L native.wild 30 "$WORK/kernels" wild
    step $L coredump.native 60 env "${COREDUMP_ENV[@]}" \
        "CUDA_COREDUMP_FILE=$CORES/coredump.native.%p.%h.nvcudmp" "$WORK/kernels" wild
    cudagdb $L coredump.native
    # A core dump with the CPU core on (the driver's default) and no lightweight flags: what a
    # plain CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 does (size, time, abort). ulimit -c 0 keeps
    # the kernel from writing the CPU core itself (the abort still shows in the exit status).
    step $L coredump.native-default 90 bash -c 'ulimit -c 0; cd "$1" && exec env \
        CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 "CUDA_COREDUMP_FILE=$1/coredump.native-default.%p.nvcudmp" \
        "$2" wild' _ "$CORES" "$WORK/kernels"
    cudagdb $L coredump.native-default
    # TORCH_USE_CUDA_DSA at run time (reprospec's debug.device_side_assertions) on a stock wheel.
    step $L dsa.assert 90 env CUDA_LAUNCH_BLOCKING=1 TORCH_USE_CUDA_DSA=1 \
        python3 "$HERE/fault.py" assert
}

lane_sanitizer() {
    local L=S t
    # Wait for lane A's build of the CUDA C++ program (at most 95 s).
    for _ in $(seq 1 95); do [ -e "$WORK/kernels.done" ] && break; sleep 1; done
    local K=$WORK/kernels
    step $L sanitizer.memcheck.native-oob 60 compute-sanitizer --tool memcheck "$K" oob
    step $L sanitizer.memcheck.native-wild 60 compute-sanitizer --tool memcheck "$K" wild
    step $L sanitizer.racecheck.native-race 60 compute-sanitizer --tool racecheck "$K" race
    step $L sanitizer.racecheck-all.native-race 60 compute-sanitizer --tool racecheck \
        --racecheck-report all "$K" race
    step $L sanitizer.initcheck.native-uninit 60 compute-sanitizer --tool initcheck "$K" uninit
    step $L sanitizer.synccheck.native-syncdiv 60 compute-sanitizer --tool synccheck "$K" syncdiv
    step $L sanitizer.synccheck.native-syncwarp 60 compute-sanitizer --tool synccheck "$K" syncwarp
    step $L sanitizer.memcheck.native-ok 60 compute-sanitizer --tool memcheck "$K" ok
    # XML and a separate log: the spellings differ between versions, so try both.
    step $L sanitizer.xml.native-oob 60 compute-sanitizer --tool memcheck --xml \
        --save "$G/sanitizer.xml.native-oob.xml" "$K" oob
    if ! grep -q 'kernels: mode' "$G/sanitizer.xml.native-oob.out"; then
        step $L sanitizer.xml-yes.native-oob 60 compute-sanitizer --tool memcheck --xml yes \
            --save "$G/sanitizer.xml-yes.native-oob.xml" "$K" oob
    fi
    step $L sanitizer.logfile.native-oob 60 compute-sanitizer --tool memcheck --print-limit 100 \
        --error-exitcode 99 --log-file "$G/sanitizer.logfile.native-oob.log" "$K" oob
    # No GPU visible: what compute-sanitizer says where the attempt sees none.
    step $L sanitizer.memcheck.no-gpu-visible 60 env CUDA_VISIBLE_DEVICES=-1 \
        compute-sanitizer --tool memcheck "$K" ok
    # torch under compute-sanitizer: slow (every kernel module instrumented as it loads).
    step $L sanitizer.memcheck.triton 150 compute-sanitizer --tool memcheck \
        python3 "$HERE/fault.py" triton
    step $L sanitizer.memcheck.assert 150 compute-sanitizer --tool memcheck \
        python3 "$HERE/fault.py" assert
    step $L sanitizer.memcheck.backward 150 compute-sanitizer --tool memcheck \
        python3 "$HERE/fault.py" backward
    step $L sanitizer.logfile.triton 150 compute-sanitizer --tool memcheck --print-limit 100 \
        --error-exitcode 99 --log-file "$G/sanitizer.logfile.triton.log" \
        python3 "$HERE/fault.py" triton
    step $L sanitizer.initcheck.uninit 150 compute-sanitizer --tool initcheck \
        python3 "$HERE/fault.py" uninit
    step $L sanitizer.memcheck.ok 150 compute-sanitizer --tool memcheck \
        python3 "$HERE/fault.py" ok
}

lane_nccl_reprospec() {
    local L=B N=$G/nccl
    step $L envinfo 90 env "PYTHONPATH=$HARNESS${PYTHONPATH:+:$PYTHONPATH}" \
        python3 -m reprospec_harness.envinfo --cuda
    # NCCL_DEBUG with subsystems and the flight recorder in one world-size-1 run.
    step $L nccl.collectives 90 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL \
        TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_CPP_LOG_LEVEL=INFO \
        python3 "$HERE/nccl.py" collectives "$N"
    # The watchdog times out an all_reduce stuck behind a GPU spin and dumps the recorder.
    # Both spellings: newer torch reads TORCH_FR_* and calls the TORCH_NCCL_* ones deprecated.
    step $L nccl.hang 75 env NCCL_DEBUG=WARN TORCH_NCCL_TRACE_BUFFER_SIZE=2000 \
        TORCH_NCCL_DUMP_ON_TIMEOUT=1 "TORCH_NCCL_DEBUG_INFO_TEMP_FILE=$N/hang_trace_rank_" \
        TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_ON_TIMEOUT=1 "TORCH_FR_DUMP_TEMP_FILE=$N/hang_fr_rank_" \
        TORCH_CPP_LOG_LEVEL=INFO "NCCL_STORE=$WORK/store-hang" \
        python3 "$HERE/nccl.py" hang "$N"
    # Two ranks on the one GPU (rank 1 in the background, its output to its own files).
    step $L nccl.duplicate-gpu 60 bash -c '
        export NCCL_DEBUG=WARN TORCH_NCCL_TRACE_BUFFER_SIZE=2000 NCCL_STORE='"$WORK/store-dup"'
        RANK=1 python3 '"$HERE/nccl.py"' rank '"$N"' >'"$N/dup-rank1.out"' 2>'"$N/dup-rank1.err"' &
        RANK=0 python3 '"$HERE/nccl.py"' rank '"$N"'
        rc0=$?; wait $!; rc1=$?; echo "rank0 rc=$rc0 rank1 rc=$rc1"; exit $rc0'
    local R=(env "PYTHONPATH=$RPATH" python3 -m reprospec)
    local RS=$WORK/rs S=$HERE
    step $L reprospec.version 30 "${R[@]}" --version
    step $L reprospec.doctor 90 "${R[@]}" doctor
    step $L reprospec.doctor-json 90 "${R[@]}" doctor --json
    step $L reprospec.doctor-spec 90 "${R[@]}" doctor "$S/cuda-smoke.yaml"
    step $L reprospec.env 90 "${R[@]}" env
    step $L reprospec.env-json 90 "${R[@]}" env --json
    step $L reprospec.gpus-bad 30 "${R[@]}" run --gpus 0,5 --out "$RS" "$S/cuda-smoke.yaml"
    step $L reprospec.run-smoke 120 "${R[@]}" run --out "$RS" "$S/cuda-smoke.yaml"
    step $L reprospec.run-slots 150 "${R[@]}" run --gpus 0 -j 2 --out "$RS" "$S/cuda-slots.yaml"
    step $L reprospec.run-fault 200 "${R[@]}" run --observe --out "$RS" "$S/cuda-fault.yaml"
    step $L pip-list 30 python3 -m pip list
    # The run folders, without the store and the capture cache.
    if [ -d "$RS/runs" ]; then
        cp -r "$RS/runs" "$G/reprospec/" 2>/dev/null
    fi
}

{
    echo "record.sh: started $(date -u +%FT%TZ) on $(hostname), budget ${BUDGET}s"
    echo "repo commit: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null) $(git -C "$REPO" status --short 2>/dev/null | wc -l) changed"
} >"$WORK/lane-0.txt"
facts
if [ "${GPU_RECORD_SERIAL:-0}" = 1 ]; then
    lane_faults
    lane_sanitizer
    lane_nccl_reprospec
else
    lane_faults &
    A=$!
    lane_sanitizer &
    S=$!
    lane_nccl_reprospec &
    B=$!
    wait $A $S $B
fi
ls -lR "$CORES" >"$G/coredump/all-cores.ls" 2>&1
{
    cat "$WORK/lane-0.txt"
    for lane in F A S B; do
        echo "== lane $lane"
        cat "$WORK/lane-$lane.txt" 2>/dev/null
    done
    echo "record.sh: ended after $(elapsed)s"
} >"$OUT/summary.txt"
cp "$OUT/summary.txt" "$G/summary.txt"
tar czf "$OUT/gpu.tar.gz" -C "$WORK" gpu
if [ "$(stat -c %s "$OUT/gpu.tar.gz")" -gt 15000000 ]; then
    echo "gpu.tar.gz over 15 MB: packed again without the core files" >>"$OUT/summary.txt"
    rm -f "$G"/coredump/*.nvcudmp
    tar czf "$OUT/gpu.tar.gz" -C "$WORK" gpu
fi
ls -l "$OUT" >>"$OUT/summary.txt"
cat "$OUT/summary.txt"
