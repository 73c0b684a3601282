#!/usr/bin/env bash
# The project's GPU check (docs/development.md, "The GPU check"): on a machine with CUDA torch
# (torch 2.11 and Python 3.12 on the image we use) and no package index, with the missing
# wheels carried in .whl/ (../shared/tools/gpu-wheels.sh fetches them on a machine that has
# an index). Two parts that can run apart:
#   tools/gpu-check.sh tests   # tests/gpu (the cuda marker): at most 3 minutes
#   tools/gpu-check.sh bench   # bench/gpu.py --quick: at most 3 minutes
#   tools/gpu-check.sh         # both
#   tools/gpu-check.sh bench --skip landscape   # arguments after the part go to bench/gpu.py
#   tools/gpu-check.sh readout # bench/gpu_readout.py: the loss readout's parts in the MLP's loop
# GPU_BENCH_TIMEOUT (seconds, default 240) bounds the bench part.
# Logs go to $OUT (the device tool's result folder) or /tmp/gpu-check.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-check}
mkdir -p "$out"
what=${1:-all}
shift || true
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/src:$PWD
else
  export PYTHONPATH=$PWD/src:$PWD
fi
export PYTHONUNBUFFERED=1
python3 -c 'import sys, torch, google.protobuf as pb; print(sys.version.split()[0], "torch",
  torch.__version__, "protobuf", pb.__version__, "cuda", torch.cuda.is_available())' | tee "$out/env.txt"
nvidia-smi -L 2>/dev/null | tee -a "$out/env.txt"
status=0
if [ "$what" = all ] || [ "$what" = tests ]; then
  timeout -k 10 200 python3 -m pytest tests/gpu -q -p no:cacheprovider -rs --timeout 170 \
    2>&1 | tee "$out/gpu-tests.log" || status=1
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  timeout -k 10 "${GPU_BENCH_TIMEOUT:-240}" python3 bench/gpu.py --quick "$@" 2>&1 | tee "$out/gpu-bench.log" || status=1
fi
if [ "$what" = readout ]; then
  timeout -k 10 120 python3 bench/gpu_readout.py "$@" 2>&1 | tee "$out/gpu-readout.log" || status=1
fi
exit $status
