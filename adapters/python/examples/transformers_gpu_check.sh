#!/usr/bin/env bash
# Runs transformers_backend.py through the kit on the machine that has torch and transformers (and a GPU):
# the self-check against the external float64 references (dense and MoE), then `mtp tck`, `mtp conform` on tiny,
# tiny-q4 and small, and `mtp conform` on the MoE fixtures tiny-moe, tiny-moe-q4, small-moe and small-moe-q4
# (transformers' Qwen3_5MoeDecoderLayer), for each device and dtype. Run from the repository root:
#
#   MTP='java -jar mtp.jar' adapters/python/examples/transformers_gpu_check.sh [OUT_DIR]
#
# MTP (default ./mtp) is how to start the kit; DEVICES (default "cuda cpu"), DTYPES (default "float32 bfloat16"),
# CHAINS (default 100) narrow the run. Every step runs even when an earlier one fails; the summary at the end lists
# each step's exit status (0 pass, 1 a check failed, 3 unavailable or bad input), and OUT_DIR keeps the reports and
# the shrunk traces of any divergence (replay one with: $MTP replay OUT_DIR/conform-…/traces/chain-….json --backend exec:'…').
set -u
MTP=${MTP:-./mtp}
OUT=${1:-mtp-reports/transformers}
DEVICES=${DEVICES:-cuda cpu}
DTYPES=${DTYPES:-float32 bfloat16}
CHAINS=${CHAINS:-100}
ENGINE="python3 adapters/python/examples/transformers_backend.py"
mkdir -p "$OUT"
summary=()
step() {
  local name=$1
  shift
  echo "== $name: $*"
  "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  summary+=("$rc  $name")
}
python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__)'
for dev in $DEVICES; do
  for dt in $DTYPES; do
    step "self-check-$dev-$dt" $ENGINE --self-check --device "$dev" --dtype "$dt"
    step "tck-$dev-$dt" $MTP tck --backend "exec:$ENGINE --device $dev --dtype $dt" --report "$OUT/tck-$dev-$dt"
    step "conform-$dev-$dt" $MTP conform --backend "exec:$ENGINE --device $dev --dtype $dt" --fixture tiny \
      --fixture tiny-q4 --fixture small --chains "$CHAINS" --quiet --report "$OUT/conform-$dev-$dt"
    step "conform-moe-$dev-$dt" $MTP conform --backend "exec:$ENGINE --device $dev --dtype $dt" \
      --fixture tiny-moe --fixture tiny-moe-q4 --fixture small-moe --fixture small-moe-q4 --chains "$CHAINS" \
      --quiet --report "$OUT/conform-moe-$dev-$dt"
  done
done
echo "== summary (exit status, step)"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
