#!/usr/bin/env bash
# Runs transformers_target.py (transformers' Qwen3_5TextModel / Qwen3_5MoeTextModel as a hybrid target) through the
# kit on the machine that has torch and transformers (and a GPU): its smoke check against the numpy target, then
# `mtp tck` (drafter and target rules) and a 1,000-chain target campaign on tiny-target in four parallel seeds, a
# bfloat16 campaign, two MoE campaigns (float32; bfloat16 with router choices compared) and loop chains (target
# and drafter together) under both drafter KV policies, each capped at SECS seconds. Run from the repository root:
#
#   MTP='java -jar mtp.jar' FIXTURE=DIR adapters/python/examples/transformers_target_gpu_check.sh [OUT_DIR]
#
# FIXTURE is a tiny-target release directory for the smoke check (`mtp fixture --preset tiny-target --out DIR`).
# DEV (default cuda), CHAINS (per seed, default 250), LOOP_CHAINS (per policy, default 100), SECS (default 320).
# docs/findings/transformers-target/ holds
# what the first run found.
set -u
MTP=${MTP:-./mtp}
OUT=${1:-mtp-reports/transformers-target}
DEV=${DEV:-cuda}
SECS=${SECS:-320}
PY="adapters/python/examples/transformers_target.py"
ENG="python3 $PY --device $DEV"
mkdir -p "$OUT"
[ -n "${FIXTURE:-}" ] && timeout 90 python3 "$PY" --smoke "$FIXTURE" --device "$DEV" > "$OUT/smoke.txt" 2>&1
pids=()
timeout "$SECS" $MTP tck --backend "exec:$ENG" --chains 10 --prefill-split 130 --report "$OUT/tck" > "$OUT/tck.txt" 2>&1 &
pids+=($!)
for k in 1 2 3 4; do
  timeout "$SECS" $MTP conform --target --backend "exec:$ENG" --fixture tiny-target --chains "${CHAINS:-250}" --seed $k \
    --report "$OUT/campaign-f32-seed$k" > "$OUT/campaign-f32-seed$k.txt" 2>&1 &
  pids+=($!)
done
timeout "$SECS" $MTP conform --target --backend "exec:$ENG --dtype bfloat16" --fixture tiny-target --chains 100 --seed 9 \
  --report "$OUT/campaign-bf16" > "$OUT/campaign-bf16.txt" 2>&1 &
pids+=($!)
timeout "$SECS" $MTP conform --target --backend "exec:$ENG" --fixture tiny-moe-target --chains 100 --seed 5 \
  --report "$OUT/campaign-moe-f32" > "$OUT/campaign-moe-f32.txt" 2>&1 &
pids+=($!)
# bfloat16 MoE: held to bf16 with its router choices compared tie-aware (targetRouterChoices, spec §12.5)
timeout "$SECS" $MTP conform --target --backend "exec:$ENG --dtype bfloat16" --fixture tiny-moe-target --chains 50 \
  --seed 6100 --report "$OUT/campaign-moe-bf16" > "$OUT/campaign-moe-bf16.txt" 2>&1 &
pids+=($!)
for kv in keep rebuild; do
  timeout "$SECS" $MTP conform --loop --kv "$kv" --backend "exec:$ENG" --fixture tiny-target --chains "${LOOP_CHAINS:-100}" \
    --seed 11 --report "$OUT/loop-$kv" > "$OUT/loop-$kv.txt" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; echo "pid $p exit $?"; done | tee "$OUT/exits.txt"
