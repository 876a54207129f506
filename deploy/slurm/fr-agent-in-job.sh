#!/usr/bin/env bash
# In a Slurm batch script, before the training step: one frdiag agent per node for this job, next to the ranks,
# with the job id Slurm gave. --overlap lets it share the nodes with the training step that follows.
#
#   #SBATCH --nodes=8 --ntasks-per-node=8 --gpus-per-node=8
#   source /opt/frdiag/deploy/slurm/fr-agent-in-job.sh
#   srun python train.py
set -euo pipefail
: "${FRDIAG_HOME:=/opt/frdiag}"
: "${FRDIAG_DAEMON:=frdiag.cluster.internal:50551}"
: "${FRDIAG_TMP:=/tmp/fr}"
export TORCH_FR_BUFFER_SIZE=2000 TORCH_FR_DUMP_TEMP_FILE="$FRDIAG_TMP/trace_rank_" \
       TORCH_NCCL_DEBUG_INFO_PIPE_FILE="$FRDIAG_TMP/pipe_" TORCH_FR_DUMP_ON_TIMEOUT=1
srun --overlap --ntasks-per-node=1 --ntasks="$SLURM_NNODES" bash -c "mkdir -p '$FRDIAG_TMP' && exec \
  '$FRDIAG_HOME/bin/fr-agent' --job '$SLURM_JOB_ID' --daemon '$FRDIAG_DAEMON' \
  --world-size '$SLURM_NTASKS' --local-ranks auto \
  --dump-prefix '$FRDIAG_TMP/trace_rank_' --pipe-prefix '$FRDIAG_TMP/pipe_' \
  --tls-ca '$FRDIAG_HOME/conf/ca.pem' --token-file \"\$HOME/.frdiag/token\" --log-format json" &
FRDIAG_AGENTS=$!
trap 'kill "$FRDIAG_AGENTS" 2>/dev/null || true' EXIT
