#!/bin/bash
# Checkpoints written by an earlier version of roformer-lit, for tests/test_earlier_checkpoints.py.
#
#   git worktree add --detach /tmp/earlier COMMIT
#   bash scripts/earlier_checkpoints.sh /tmp/earlier tests/earlier_checkpoints/COMMIT
#
# In the worktree (the earlier code, on PYTHONPATH), for each case below: a 40-step run of the
# copy task with a tiny encoder (hidden 8, 2 heads) at a high learning rate (so that its
# attention, and with it the position scheme, shapes the logits), validated every 20 steps;
# then that run resumed to step 60. It keeps the step-40 last.ckpt as OUT/<case>.ckpt and,
# through scripts/earlier_checkpoint_record.py run on the earlier code, what that code
# computed: OUT/<case>.json with the logits of fixed padded ids and every val/loss the run
# and its resumed run logged. The test loads each checkpoint with today's code and compares.
set -eu
tree=$(cd "$1" && pwd); out=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python}
common=(--config configs/probes/copy.yaml --model.hidden_size 8 --model.num_heads 2
        --model.intermediate_size 16 --model.learning_rate 0.05 --model.warmup_steps 4
        --trainer.val_check_interval 20 --data.max_val_blocks 8 --data.batch_size 4)
GEGLU='{mlp: geglu, norm: layernorm, norm_bias: false, linear_bias: false, first_norm: false}'
MODERN='{pattern: [global, local], types: {global: {position_kwargs: {base: 160000.0}}, local: {window: 4, position_kwargs: {base: 10000.0}}}}'
NOPE_LAST='{pattern: [local, global], types: {global: {position: nope}, local: {window: 4}}}'

one() {  # one CASE ARGS...: the case's run, resume and record
    local case=$1; shift
    local work; work=$(mktemp -d)
    (cd "$work" && cp -r "$tree/configs" . \
        && PYTHONPATH="$tree" "$python" -m roformer_lit fit "${common[@]}" "$@" --trainer.max_steps 40 \
        && cp runs/probes/*/checkpoints/last.ckpt "$out/$case.ckpt" \
        && PYTHONPATH="$tree" "$python" -m roformer_lit fit "${common[@]}" "$@" --trainer.max_steps 60 \
               --ckpt_path runs/probes/*/checkpoints/last.ckpt \
        && PYTHONPATH="$tree" "$python" "$here/earlier_checkpoint_record.py" "$out/$case.ckpt" \
               runs/probes/* "$out/$case.json" "${common[@]}" "$@") > "$out/$case.log" 2>&1 \
        && echo "$case: ok" || { echo "$case: failed (see $out/$case.log)"; exit 1; }
    rm -rf "$work" "$out/$case.log"
}

for scheme in nope learned sinusoidal xl deberta rope alibi t5 kerple fire; do
    one "$scheme" --model.position "$scheme"
done
one linear-rope --model.position rope --model.attention linear
one plan-geglu --model.block "$GEGLU" --model.layer_plan "$MODERN"
one plan-nope-last --model.layer_plan "$NOPE_LAST"
git -C "$tree" rev-parse HEAD > "$out/COMMIT"
