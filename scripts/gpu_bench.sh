#!/usr/bin/env bash
# The GPU figures of the README's "On a GPU" section, on one CUDA GPU:
#   bash scripts/gpu_bench.sh [OUT_DIR]
# 1. the GPU-only tests (bf16 per pair, flash kernel shown by the profiler, FlexAttention
#    against SDPA in float32 and bf16, the auto backend's choice);
# 2. BERT-base, bf16, L = 512: MFU against the GPU's nominal peak, SDPA backend per
#    scheme, ours vs the HF references;
# 3. the torch.compile speed-up of the schemes the MFU target names;
# 4. bias schemes on FlexAttention against SDPA at L = 512, 2048, 4096 (time, memory).
set -euo pipefail
out="${1:-bench-gpu}"
mkdir -p "$out"
python -m pytest tests/test_gpu.py -q -p no:cacheprovider 2>&1 | tee "$out/test_gpu.txt"
python -m roformer_lit bench --bert-base --batch 32 --lengths 512 --kernels softmax \
    --vs-hf --rounds 6 --warmup 2 2>&1 | tee "$out/bert_base_512.txt"
python -m roformer_lit bench --bert-base --batch 32 --lengths 512 --schemes nope rope learned \
    --kernels softmax --compile-speedup --rounds 5 --warmup 2 --no-memory --no-backends \
    2>&1 | tee "$out/compile_512.txt"
python -m roformer_lit bench-flex --lengths 512 2048 4096 --rounds 4 --warmup 1 \
    2>&1 | tee "$out/flex.txt"
