#!/usr/bin/env bash
# Short runs of the configs a refactor must leave unchanged, written under OUT_DIR/<name>;
# run once per checkout (PYTHONPATH=<checkout>) and compare each pair with
#   python scripts/same_curves.py OUT_A/<name>/<run> OUT_B/<name>/<run>
# The quick start, the five position tasks, a layer-plan recipe, a plan study config and a
# fine-tune of the quick start's checkpoint, each cut to a few steps (same seeds).
#   PYTHONPATH=$PWD bash scripts/same_curves_runs.sh OUT_DIR   (REPO=<checkout> to take its configs)
set -euo pipefail
OUT=$(realpath -m "$1")
REPO=${REPO:-$(cd "$(dirname "$0")/.." && pwd)}
mkdir -p "$OUT"
cd "$OUT"
run() {  # name, then the command's arguments
  local name=$1; shift
  python -m roformer_lit "$@" --trainer.logger.init_args.save_dir "$OUT/$name" \
    --trainer.enable_progress_bar false > "$OUT/$name.log" 2>&1
}
run quickstart fit --config "$REPO/configs/rope.yaml" --trainer.max_steps 60 --trainer.val_check_interval 20
for task in copy reverse sort recall odds_first; do
  run "$task" fit --config "$REPO/configs/probes/$task.yaml" --trainer.max_steps 60 --trainer.val_check_interval 20
done
run modernbert fit --config "$REPO/configs/rope.yaml" --config "$REPO/configs/recipes/modernbert.yaml" \
  --trainer.max_steps 40 --trainer.val_check_interval 20
run plans fit --config "$REPO/configs/probes/recall.yaml" --model.num_layers 3 \
  --model.layer_plan '{pattern: [local, local, global], types: {global: {position: nope}, local: {window: 8}}}' \
  --trainer.max_steps 60 --trainer.val_check_interval 20
ckpt=$(ls -d "$OUT"/quickstart/mlm/*/checkpoints/last.ckpt | head -1)
run finetune finetune --config "$REPO/configs/finetune/movie_polarity.yaml" --model.pretrained "$ckpt" \
  --trainer.max_steps 20 --trainer.val_check_interval 10
echo "runs in $OUT"
