#!/usr/bin/env bash
# A conformance campaign as a Slurm job array: task i (1..4) runs shard i of 4, and a dependent job merges them and
# fails (exit 3) when a shard is missing. Submit from a checkout on a shared file system:
#   jobid=$(sbatch --parsable examples/ci/slurm-array.sh)
#   sbatch --dependency=afterany:$jobid --wrap "./mtp conform merge reports/shard-*/report.json --report reports/merged"
# Keep the seed, chains and shard count identical in every shard; raise --chains for a real campaign.
#SBATCH --job-name=mtp-conform
#SBATCH --array=1-4
#SBATCH --cpus-per-task=2
#SBATCH --output=reports/slurm-%A_%a.log
set -euo pipefail
./mtp conform --backend reference --fixture tiny --chains 24 --seed 7 --shard ${SLURM_ARRAY_TASK_ID}/4 --report reports/shard-${SLURM_ARRAY_TASK_ID}
