#!/usr/bin/env bash
# Usage: scripts/user_runs.sh TREE OUTDIR
# Short versions of what users run (the quick start, one run of each position task, one with
# randomized positions, one on the budget studies' path (constant rate, checkpoints at chosen
# steps), one with a local/global layer plan, one fine-tune) with the code of the checkout
# TREE, into OUTDIR/runs.
# Run it for two checkouts (before and after a change), then compare each pair of runs with
# scripts/same_curves.py: a refactor must give identical curves, bit for bit.
set -e
TREE=$(cd "$1" && pwd)
mkdir -p "$2"
cd "$2"
export PYTHONPATH="$TREE"
PY=${PYTHON:-python}
C="$TREE/configs"
SHORT=(--trainer.max_steps 60 --trainer.val_check_interval 30)
$PY -m roformer_lit fit --config "$C/rope.yaml" "${SHORT[@]}" > fit_rope.log 2>&1
for t in copy reverse sort odds_first recall; do
  $PY -m roformer_lit fit --config "$C/probes/$t.yaml" "${SHORT[@]}" > "probe_$t.log" 2>&1
done
$PY -m roformer_lit fit --config "$C/probes/copy.yaml" "${SHORT[@]}" --data.random_positions 256 > probe_copy_rp.log 2>&1
$PY -m roformer_lit fit --config "$C/probes/copy.yaml" "${SHORT[@]}" --model.lr_schedule constant \
  --trainer.callbacks '[{"class_path": "roformer_lit.training.step_checkpoints.StepCheckpoints", "init_args": {"steps": [30, 60]}}]' \
  --trainer.logger.init_args.name budget > probe_copy_budget.log 2>&1
$PY -m roformer_lit fit --config "$C/probes/copy.yaml" "${SHORT[@]}" --model.num_layers 3 \
  --model.layer_plan '{"pattern": ["global", "local", "local"], "types": {"global": {"position": "nope"}, "local": {"window": 8}}}' \
  --trainer.logger.init_args.name plans > probe_copy_plan.log 2>&1
$PY -m roformer_lit finetune --config "$C/finetune/movie_polarity.yaml" --config "$C/finetune/cpu.yaml" \
  --model.pretrained runs/mlm/rope-softmax-seed0/checkpoints/last.ckpt --trainer.max_steps 30 > finetune.log 2>&1
find runs -maxdepth 2 -mindepth 2 -type d | sort
