#!/usr/bin/env bash
# Layer plans on one CUDA GPU (the README's windowed-attention GPU figures):
#   bash scripts/gpu_plans.sh [OUT_DIR]
# 1. windowed attention through FlexAttention's block mask: forward against the float64
#    oracle (every scheme, padding, documents) and a 2:1 plan's training step against the
#    banded SDPA computation (every scheme, float32 and bf16);
# 2. step time of all-local (128-token windows) and ModernBERT's 2:1 plan against
#    all-global, BERT-base shape, bf16, 128 to 8,192 tokens, as ratios in one run
#    (rope: no bias in score_mod; alibi: its slopes in score_mod);
# 3. the other GPU-only tests.
set -uo pipefail
out="${1:-bench-gpu}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/machine.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" \
    | tee -a "$out/machine.txt"
python3 -m pytest tests/test_gpu.py tests/test_windowed_attention.py -q \
    -k "windowed_flex or block_mask" 2>&1 | tee "$out/test_windows.txt"
python3 -m roformer_lit bench --bert-base --batch 2 --schemes rope alibi --kernels softmax \
    --lengths 128 512 2048 8192 --plans 128 --rounds 3 --warmup 1 --no-memory --no-backends \
    --no-mfu 2>&1 | tee "$out/plans.txt"
python3 -m pytest tests/test_gpu.py -q -k "not windowed_flex" 2>&1 | tee "$out/test_gpu.txt"
