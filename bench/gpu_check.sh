#!/usr/bin/env bash
# The prepared GPU check: run as is, from the repository root, on a machine with one CUDA GPU whose Python already has
# torch, transformers, accelerate and sentence-transformers (the device tool's image) and no network. Under 8 minutes.
#
#   here, once (PyPI answers):   .venv/bin/python -m bench.gpu_wheelhouse        # .whl/: what the image lacks
#   there:                       bash bench/gpu_check.sh                         # carry .whl; logs go to $OUT or ./gpu-check
#
# 1. installs the carried wheels (lm-eval, datasets, evaluate, mapie, pydantic, gguf, rouge-score, ...; the list is
#    bench/gpu_wheelhouse.py's CARRIED) into /tmp/site, no dependencies resolved, nothing fetched;
# 2. runs the tests that touch devices and dtypes on CUDA (tests/test_devices.py, marker `device`: semuq-hf on CUDA in
#    float32 against the CPU and in bfloat16, the encoder and NLI operators on CUDA against the CPU, a semuq task end
#    to end on CUDA) and, as a check of the install, the CPU tests of semuq-hf and the operators on tiny models;
# 3. a bench/generation.py smoke run on CUDA (the tiny fixture model: no real weights travel) against the GPU's
#    matmul peak.
# vLLM is not part of it: its CUDA wheel (hundreds of MB) cannot travel; docs/serving.md says what was run where.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOG=${OUT:-gpu-check}
mkdir -p "$LOG"
start=$SECONDS
status=0
step() { echo "[gpu_check $((SECONDS - start)) s] $*" | tee -a "$LOG/summary.txt"; }

step "python: $($PY --version 2>&1); $($PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "-")' 2>&1)"
if ! $PY -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  step "FAIL: no CUDA GPU visible to torch"; exit 1
fi
ls .whl/*.whl >/dev/null 2>&1 || { step "FAIL: no .whl/ (run python -m bench.gpu_wheelhouse here and carry .whl)"; exit 1; }
$PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$LOG/install.log" 2>&1 || { step "FAIL: installing the carried wheels (install.log)"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
step "installed $(ls .whl/*.whl | wc -l) wheels; semuq_eval from $($PY -c 'import semuq_eval, lm_eval, datasets; print(semuq_eval.__file__, "lm_eval", lm_eval.__version__, "datasets", datasets.__version__)' 2>&1)"

# the device tests, then the CPU tests of the same code (a check that the install is whole); pytest's own cache off
timeout 300 $PY -m pytest -q -p no:cacheprovider -o addopts="" -m device tests/test_devices.py -rA \
  > "$LOG/device-tests.log" 2>&1 || status=1
step "device tests: $(tail -n 1 "$LOG/device-tests.log")"
timeout 150 $PY -m pytest -q -p no:cacheprovider -o addopts="" -x tests/test_models_hf.py tests/test_operators_encoder.py \
  > "$LOG/cpu-tests.log" 2>&1 || status=1
step "cpu tests of the same code: $(tail -n 1 "$LOG/cpu-tests.log")"

# a smoke run of the generation benchmark on the GPU, on the tiny fixture model
$PY -c "from tests.fixtures.tiny_lm import build_tiny_gpt2; build_tiny_gpt2('/tmp/semuq-tiny-gpt2')" > "$LOG/bench.log" 2>&1
timeout 120 $PY -m bench.generation --model /tmp/semuq-tiny-gpt2 --device cuda --configs semuq-hf-fp32,semuq-hf-bf16,hf \
  --questions 4 --n 4 --repeats 1 --hf-batch-sizes 5 --matmul-max-size 8192 --json "$LOG/bench.json" \
  >> "$LOG/bench.log" 2>&1 || status=1
step "bench smoke run: $(grep -E '^semuq-hf-bf16|^semuq-hf-fp32' "$LOG/bench.log" | tr -s ' ' | tr '\n' ';')"
step "done, status $status"
exit $status
