#!/usr/bin/env bash
# The GPU questions of one prepared run, in order of value, each step under its own time
# cap (a cut run still returns the steps before the cut):
#   bash scripts/gpu_check.sh [--cpu-dry-run] OUT_DIR
#   STEPS="3 4" bash scripts/gpu_check.sh OUT_DIR      # only some steps
#   BUNDLE=$OUT/gpu-check.tar.gz bash scripts/gpu_check.sh /tmp/gpu-check
#     (OUT_DIR packed into BUNDLE after every step: one file comes back whole from a
#     device run, which returns at most eight files, also when the run is cut)
# 1. the GPU-only tests (tests/test_gpu.py, the windowed FlexAttention training step
#    included): counts and failures;
# 2. MFU through the command users run: fit --config configs/<s>.yaml --config
#    configs/size/base.yaml (rope, nope, learned), compiled, bf16, L = 512, a short
#    max_steps; tokens/s, model TFLOP/s and MFU read off each run's own perf/* log;
# 3. ModernBERT's recipe at its real size (hidden 768, 22 layers, 12 heads, FFN 1152,
#    window 128, global every third) against transformers' ModernBertForMaskedLM with the
#    same weights (bench --vs-hf), training step and inference, at 512 and 8,192 tokens;
# 4. bias schemes against nope at 512 and 2,048 (the backend auto picks, printed by
#    bench), eager, then compiled (bench --compile), at BERT-base width, 4 layers (so that
#    fourteen compiles fit the cap).
# --cpu-dry-run: tiny shapes on the CPU that run every line and write the same files.
set -uo pipefail
dry=0
if [[ "${1:-}" == "--cpu-dry-run" ]]; then
    dry=1
    shift
fi
usage="usage: bash scripts/gpu_check.sh [--cpu-dry-run] OUT_DIR"
refuse() {
    echo "error: gpu_check.sh: $1" >&2
    exit 2
}
[[ $# -eq 1 ]] || refuse "expected one OUT_DIR after the options, got $# arguments ($usage)"
out="$1"
[[ "$out" != -* ]] || refuse "unknown option $out; valid: --cpu-dry-run ($usage)"
steps="${STEPS:-1 2 3 4}"
for number in $steps; do
    [[ "$number" =~ ^[1-4]$ ]] || refuse "STEPS names step '$number'; valid: 1 2 3 4"
done
[[ ! -e "$out" || -d "$out" ]] || refuse "OUT_DIR $out exists and is not a folder"
if [[ -d "$out" && -n "$(ls -A "$out")" ]]; then
    refuse "OUT_DIR $out is not empty: its outputs would mix with this run's; name a new folder"
fi
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=python3
started=$(date +%s)
runs_dir=$(mktemp -d)  # the fits' run directories; their table (2-mfu.txt) comes back

# step FILE CAP_SECONDS COMMAND...: runs COMMAND under its cap, its output to OUT/FILE.txt
# after a first line "# <UTC time> <command>" (the form the study pages read)
step() {
    local name="$1" cap="$2"
    shift 2
    local begin=$(date +%s)
    echo "# $(date -u +%FT%TZ) $*" >> "$out/$name.txt"
    timeout --kill-after=10 "$cap" "$@" >> "$out/$name.txt" 2>&1
    local rc=$?
    echo "# exit $rc after $(( $(date +%s) - begin )) s (cap $cap s)" >> "$out/$name.txt"
    echo "$name: exit $rc, $(( $(date +%s) - begin )) s: ${*:1:4}" | tee -a "$out/machine.txt"
    if [[ -n "${BUNDLE:-}" ]]; then
        tar -czf "$BUNDLE" -C "$out" .
    fi
}

{
    date -u +%FT%TZ
    git rev-parse HEAD 2>/dev/null || echo "no git"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
        || echo "no nvidia-smi"
    $py -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"
} > "$out/machine.txt" 2>&1

if [[ $dry == 1 ]]; then
    device=(--device cpu)
    # the GPU's config stack (the size overlay: bf16-mixed, gradient clipping) at a tiny size
    size=(--config configs/size/base.yaml)
    fit_device=(--trainer.accelerator cpu --data.batch_size 2 --data.max_length 64
        --model.max_positions 64 --model.hidden_size 64 --model.num_heads 2
        --model.num_layers 2 --model.intermediate_size 128 --data.num_workers 0)
    fit_steps=10
    tests=(tests/test_gpu.py tests/test_windowed_attention.py -k "gpu or cuda or flex")
    recipe_shape=(--hidden 64 --layers 4 --heads 2 --intermediate 96 --vocab 512)
    recipe_runs=("64 2" "256 1")
    bias_shape=(--hidden 64 --layers 2 --heads 2 --intermediate 128 --vocab 512)
    bias_runs=("64 2" "128 1")
    rounds=1
else
    device=(--device cuda)
    size=(--config configs/size/base.yaml)
    fit_device=()
    fit_steps=60
    tests=(tests/test_gpu.py tests/test_windowed_attention.py -k "gpu or cuda or flex" -n 4)
    recipe_shape=(--hidden 768 --layers 22 --heads 12 --intermediate 1152 --vocab 50368)
    recipe_runs=("512 16" "8192 1")
    bias_shape=(--hidden 768 --layers 4 --heads 12 --intermediate 3072 --vocab 30522)
    bias_runs=("512 16" "2048 4")
    rounds=5
fi

for number in $steps; do
    case $number in
    1)
        step 1-tests 150 $py -m pytest "${tests[@]}" -v -rfEs -p no:cacheprovider
        ;;
    2)
        runs=()
        for scheme in rope nope learned; do
            step "2-fit-$scheme" 100 $py -m roformer_lit fit --config "configs/$scheme.yaml" \
                "${size[@]}" "${fit_device[@]}" --model.compile true \
                --trainer.max_steps "$fit_steps" --trainer.limit_val_batches 0 --trainer.log_every_n_steps 2 \
                --trainer.logger.init_args.save_dir "$runs_dir" \
                --trainer.logger.init_args.version "$scheme"
            runs+=("$runs_dir/mlm/$scheme")
        done
        step 2-mfu 60 $py scripts/run_throughput.py "${runs[@]}"
        ;;
    3)
        for run in "${recipe_runs[@]}"; do
            read -r length batch <<< "$run"
            step "3-modernbert-$length" 150 $py -m roformer_lit bench "${device[@]}" \
                "${recipe_shape[@]}" --lengths "$length" --batch "$batch" --schemes nope \
                --kernels softmax --vs-hf --rounds "$rounds" --warmup 2 --no-backends --no-memory
        done
        ;;
    4)
        # eager first at both lengths (cheap), then compiled: a cut loses the compiled tail
        for compiled in "" --compile; do
            for run in "${bias_runs[@]}"; do
                read -r length batch <<< "$run"
                step "4-bias-$length${compiled:+-compiled}" 150 $py -m roformer_lit bench "${device[@]}" "${bias_shape[@]}" \
                    --lengths "$length" --batch "$batch" $compiled \
                    --schemes nope alibi t5 kerple fire xl deberta --kernels softmax \
                    --rounds "$rounds" --warmup 1 --no-memory
            done
        done
        ;;
    esac
done
echo "total $(( $(date +%s) - started )) s" | tee -a "$out/machine.txt"
