#!/usr/bin/env bash
# One run on a lent GPU machine (the `device` tool), from the repository root, needing only the machine's own
# python3 with nvidia-ml-py (and PyTorch for the load): the real-GPU tests, the sampler's figures idle and
# under load, and `gpu-assist util` as a user sees it. Everything lands in $OUT (default bench/results/gpu).
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
out="${OUT:-bench/results/gpu}"
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit --format=csv | tee "$out/nvidia-smi.csv"
python3 -c 'import pynvml, torch; print("nvidia-ml-py", pynvml.__version__ if hasattr(pynvml, "__version__") else "?", "torch", torch.__version__)'
python3 -m pytest --noconftest -p no:cacheprovider -v tests/gpu 2>&1 | tee "$out/pytest.txt"
python3 -m gpu_assist util | tee "$out/util-idle.txt"
python3 bench/gpu_check.py "$out/gpu_check-idle.json" --seconds 10 >/dev/null
python3 tests/gpu/gpu_load.py 30 > "$out/load.txt" &
sleep 8
python3 -m gpu_assist util | tee "$out/util-busy.txt"
python3 -m gpu_assist util --format json > "$out/util-busy.json"
python3 bench/gpu_check.py "$out/gpu_check-busy.json" --seconds 10 >/dev/null
echo "load pid $!" | tee -a "$out/util-busy.txt"
wait
python3 - "$out" <<'PY'
import json, sys
for name in ("idle", "busy"):
    r = json.load(open(f"{sys.argv[1]}/gpu_check-{name}.json"))
    utils = [g["utilization_gpu_pct"] for s in r["snapshots"] for g in s["gpus"]]
    print(name, r["gpus"], r["gpu_names"], "util", utils, "cpu/sample median", r["cpu_s_per_sample_median"],
          "unsupported", r["unsupported_fields"], "errors", r["errors"])
PY
