#!/usr/bin/env bash
# The GPU goals in one run of at most 8 minutes on one fresh GPU machine, one table of ratios
# each measured side by side (benchmarks/speed/gpu_ratios.py: what each part measures):
#
#   GRACE_CODE=/path/to/GRACE bash benchmarks/speed/gpu.sh OUT   # a CRIPAC-DIG/GRACE checkout
#   DRY=1 bash benchmarks/speed/gpu.sh OUT                       # the rehearsal on the CPU (CI)
#
# Run from the repository's root with cl2gnn importable and CL2GNN_DATA naming the data
# (planetoid/Cora). Every part runs under its own `timeout`, in order of the goals, while the
# budget (BUDGET seconds, default 450) leaves it room; whatever the machine lacks (CUDA,
# Triton, lightly, GRACE's code, Cora) or a part that fails or runs out of time is a line of
# the table that says so. OUT gets ratios.jsonl, the table (table.md) and each part's log;
# SAVE=1 also writes the table to benchmarks/results/gpu_ratios.json (the results page).
set -uo pipefail
out=${1:-}
if [[ -z $out ]]; then
    echo "gpu.sh: error: usage: [DRY=1] [GRACE_CODE=DIR] [BUDGET=SECONDS] gpu.sh OUT" >&2
    exit 2
fi
mkdir -p "$out" && : >"$out/ratios.jsonl" || exit 2
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
budget=${BUDGET:-450}
flags=()
grace=()
[[ ${DRY:-0} == 1 ]] && flags=(--dry)
if [[ -n ${GRACE_CODE:-} ]]; then
    grace=(--grace-code "$GRACE_CODE")
fi
skip() { # part, reason: a line of the table
    printf '{"part": "%s", "measure": "%s", "skipped": "%s"}\n' "$1" "$1" "$2" >>"$out/ratios.jsonl"
    echo "### $1: skipped, $2"
}
part() { # name, seconds allowed, then the command
    local name=$1 limit=$2
    shift 2
    if ((SECONDS + limit > budget)); then
        skip "$name" "not started: ${limit} s would pass the ${budget} s budget"
        return
    fi
    echo "### $name (at most ${limit} s)"
    local start=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
    local status=$?
    if ((status == 124 || status == 137)); then
        skip "$name" "stopped after ${limit} s"
    elif ((status != 0)); then
        skip "$name" "failed (exit $status): $(tail -n 1 "$out/$name.log" | tr -d '"\\')"
    fi
    echo "### $name: exit $status after $((SECONDS - start)) s"
}
ratios=(python3 -m benchmarks.speed.gpu_ratios)

python3 -c "import torch, torch_geometric as g; print('torch', torch.__version__, 'PyG', \
g.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA')"
if [[ ${DRY:-0} != 1 ]] && ! python3 -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    skip "all" "no CUDA device here (DRY=1 rehearses the parts on the CPU)"
else
    part cora 110 "${ratios[@]}" cora --out "$out" "${flags[@]}" "${grace[@]}"
    part loss 80 "${ratios[@]}" loss --out "$out" "${flags[@]}"
    part knn 80 "${ratios[@]}" knn --out "$out" "${flags[@]}"
    part profile 40 "${ratios[@]}" profile --out "$out" "${flags[@]}"
    part simclr 50 "${ratios[@]}" simclr --out "$out" "${flags[@]}"
    if [[ ${DRY:-0} != 1 ]]; then # the kernels' own checks on the device (CI runs the suite)
        part tests 60 python3 -m pytest -q -p no:cacheprovider -n 0 -k cuda \
            tests/nn/test_tiled_triton.py tests/graphs/test_knn.py
    fi
fi
save=()
[[ ${SAVE:-0} == 1 ]] && save=(--save)
"${ratios[@]}" table --out "$out" "${save[@]}" | tee "$out/table.md"
echo "gpu.sh: ${SECONDS} s"
