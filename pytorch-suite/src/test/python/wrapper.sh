#!/usr/bin/env bash
# torchrun --no-python bash wrapper.sh <job dir>: runs once per rank. torchrun has no per-rank templating, so the
# rank's own worker-server socket is set here from the RANK torchrun gives it; train.py needs nothing but worker_main.
if [ -n "${WORKER_SOCKET_PREFIX:-}" ]; then
  export TORCH_WORKER_SERVER_SOCKET="${WORKER_SOCKET_PREFIX}${RANK}.sock"
fi
exec python "$(dirname "${BASH_SOURCE[0]}")/train.py" "$@"
