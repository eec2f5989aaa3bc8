#!/usr/bin/env bash
# The GPU checks, in two parts of a few minutes each on one H100-class GPU:
#
#   bash benchmarks/speed/gpu.sh checks OUT    # the suite on CUDA (Triton tests included),
#                                              # verify, the exact loss at 65k-1M views,
#                                              # full-graph GRACE at arxiv size, the kNN graph,
#                                              # the exact forms' cross-over; with GRACE_CODE
#                                              # (a GRACE checkout) Cora against GRACE's code
#   bash benchmarks/speed/gpu.sh images OUT [EPOCHS]
#                                              # SimCLR ResNet-18 on CIFAR-10, batch 512:
#                                              # steps/s with and without --compile, a profile,
#                                              # then EPOCHS (default 10) of SimCLR and +attention
#
# Run from the repository's root with cl2gnn importable and CL2GNN_DATA naming the data
# (planetoid/ and heterophilous/ for checks, cifar10-jpeg/ for images). OUT gets one log per
# part and the measured tables as benchmarks/results JSON (copied there); the logs name
# what failed. Nothing here stops at the first failure: every check runs and reports.
set -uo pipefail
part=${1:-} out=${2:-} epochs=${3:-10}
if [[ $part != checks && $part != images ]] || [[ -z $out ]] || ! [[ $epochs =~ ^[1-9][0-9]*$ ]]; then
    echo "gpu.sh: error: usage: gpu.sh checks|images OUT [EPOCHS > 0]" >&2
    exit 2
fi
mkdir -p "$out"
export PYTHONUNBUFFERED=1
log="$out/$part.log"
step() {  # run one check, its output in the log, its status at the log's end
    echo "### $*" | tee -a "$log"
    local start=$SECONDS
    "$@" >>"$log" 2>&1
    local status=$?
    echo "### exit $status after $((SECONDS - start)) s: $*" | tee -a "$log"
}
python3 -c "import torch, torch_geometric; print(torch.__version__, torch_geometric.__version__, \
torch.cuda.get_device_name())" | tee -a "$log"

case $part in
checks)
    step python3 -m pytest -q -p no:cacheprovider -rs
    step python3 -m cl2gnn verify --device cuda
    step python3 -m benchmarks.speed.infonce_scale scale --sizes 65536 262144 1048576 \
        --dtype bfloat16 --save gpu_scale_infonce
    step python3 -m benchmarks.speed.fullgraph_step --nodes 169343 --device cuda \
        --save gpu_fullgraph_arxiv
    step python3 -m benchmarks.speed.knn_build --sizes 100000 1000000 --dim 128 --k 10 \
        --device cuda --save gpu_knn
    step python3 -m benchmarks.speed.infonce_scale crossover --device cuda \
        --forms dense tiled triton --sizes 2048 4096 8192 16384 32768 --save gpu_infonce_crossover
    if [[ -n ${GRACE_CODE:-} ]]; then  # a checkout of CRIPAC-DIG/GRACE, carried to the machine
        step python3 -m benchmarks.speed.node_speed_grace --grace-code "$GRACE_CODE" \
            --device cuda --rounds 2 --epochs 200
    fi
    cp benchmarks/results/gpu_{scale_infonce,fullgraph_arxiv,knn,infonce_crossover}.json \
        benchmarks/results/node_speed_grace_cuda.json "$out"/ 2>>"$log"
    ;;
images)
    common=(--arch resnet18 --batch-size 512 --steps 40 --device cuda)
    step python3 -m benchmarks.accuracy.image_ssl throughput "${common[@]}" \
        --json "$out/eager.json" --profile "$out/profile-eager.txt"
    step python3 -m benchmarks.accuracy.image_ssl throughput "${common[@]}" --compile \
        --json "$out/compiled.json" --profile "$out/profile-compiled.txt"
    for variant in simclr attention; do
        flags=()
        [[ $variant == attention ]] && flags=(--attention 1.0)
        step python3 -m cl2gnn simclr --dataset cifar10 --epochs "$epochs" --batch-size 512 \
            --seed 0 --no-progress "${flags[@]}" --json "$out/$variant.json"
    done
    ;;
esac
