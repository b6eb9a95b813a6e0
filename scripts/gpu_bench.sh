#!/usr/bin/env bash
# The GPU figures of the README's performance section, on one CUDA GPU:
#   bash scripts/gpu_bench.sh [OUT_DIR]
# 1. the GPU-only tests (bf16 per pair, flash kernel shown by the profiler);
# 2. BERT-base, bf16, L = 512: MFU against the GPU's nominal peak, SDPA backend per
#    scheme, ours vs the HF references, eager vs torch.compile per scheme;
# 3. the CPU benchmark's shape on the GPU at L = 128 / 512 / 2048 (memory, ratios).
set -euo pipefail
out="${1:-bench-gpu}"
mkdir -p "$out"
python -m pytest tests/test_gpu.py -q -p no:cacheprovider 2>&1 | tee "$out/test_gpu.txt"
python -m roformer_lit bench --bert-base --batch 32 --lengths 512 --kernels softmax \
    --vs-hf --compile-speedup --rounds 10 --warmup 3 2>&1 | tee "$out/bert_base_512.txt"
python -m roformer_lit bench --lengths 128 512 2048 --rounds 10 --warmup 3 --vs-hf \
    2>&1 | tee "$out/small.txt"
