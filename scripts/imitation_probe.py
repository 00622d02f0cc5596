"""Does a trained model imitate its tool's output? The masking ablation's probe (issue 22).

Plays a recipe's held-out tasks greedily with ``--reference`` through the
trainer's own rollout code (``play_episodes`` + ``ChatGlue``, the recipe's
system prompt, observation style and budgets), keeps the episodes that called
the tool, and scores those exact token sequences under each ``--models`` entry:
the mean negative log-likelihood (nats a token) and the top-1 accuracy of

- ``model``: the tokens the policy wrote (mask 1, what GRPO trains),
- ``observation``: every observation token (mask 0: the chat glue, tags, the
  interpreter's text),
- ``interpreter_digits``: the digits inside ``<interpreter>...</interpreter>``,
  i.e. the product the tool computed, which the policy cannot know,
- ``passage``: the retrieved text inside ``<information>...</information>``
  (SearchQA), which a policy trained on it may learn to write itself.

A model trained with observation tokens in its loss (``--no-mask-observations``)
has been taught to predict those tokens as if it had written them: the probe
shows how far it went. Prints one JSON object.

    OMP_NUM_THREADS=1 python scripts/imitation_probe.py --config docs/training/mathtool-tooluse.yaml \\
        --reference hf:runs/mathtool-tooluse/final \\
        --models smollm2 hf:runs/mathtool-tooluse/final hf:runs/mathtool-tooluse-unmasked/final
    OMP_NUM_THREADS=1 python scripts/imitation_probe.py --config docs/training/searchqa-search-r1.yaml \\
        --reference hf:runs/search-r1-sft/final \\
        --models hf:runs/search-r1-sft/final hf:runs/search-r1-rl/final hf:runs/search-r1-rl-unmasked/final
"""

from __future__ import annotations

import argparse
import json
import math
import re
from typing import Any


_REGIONS = (("interpreter", re.compile(r"<interpreter>(.*?)(?:</interpreter>|$)", re.S)),
            ("passage", re.compile(r"<information>(.*?)(?:</information>|$)", re.S)))


def _segments(tokenizer: Any, ids: list[int], mask: list[int]) -> list[str]:
    """Each completion token's class: ``model`` (mask 1), ``interpreter_digits`` (a digit token inside
    ``<interpreter>...</interpreter>``), ``passage`` (a token wholly inside ``<information>...</information>``:
    the retrieved text) or ``observation`` (the rest: chat glue, tags, the interpreter's other text)."""
    kinds: list[str] = []
    i = 0
    while i < len(ids):
        if mask[i]:
            kinds.append("model")
            i += 1
            continue
        j = i
        while j < len(ids) and not mask[j]:
            j += 1
        pieces = [tokenizer.decode([t]) for t in ids[i:j]]  # one observation: its text, and each token's span
        text, spans = "", []
        for piece in pieces:
            spans.append((len(text), len(text) + len(piece)))
            text += piece
        regions = [(name, m.start(1), m.end(1)) for name, pattern in _REGIONS for m in pattern.finditer(text)]
        for piece, (a, b) in zip(pieces, spans):
            inside = next((name for name, start, end in regions if start <= a and b <= end and a < b), None)
            if inside == "interpreter" and piece.strip().isdigit():
                kinds.append("interpreter_digits")
            elif inside == "passage":
                kinds.append("passage")
            else:
                kinds.append("observation")
        i = j
    return kinds


def score(model: Any, tokenizer: Any, episodes: list[Any], batch: int = 8) -> dict[str, dict[str, float]]:
    import torch

    totals: dict[str, list[float]] = {}
    for start in range(0, len(episodes), batch):
        chunk = episodes[start:start + batch]
        seqs = [e.prompt_ids + e.completion_ids for e in chunk]
        width = max(len(s) for s in seqs)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        input_ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
        attention = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        with torch.no_grad():
            logits = model(input_ids=input_ids, attention_mask=attention).logits
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        for row, e in enumerate(chunk):
            kinds = _segments(tokenizer, e.completion_ids, e.mask)
            offset = len(e.prompt_ids)
            for i, (token, kind) in enumerate(zip(e.completion_ids, kinds)):
                position = offset + i - 1  # the logits that predict this token
                lp = logprobs[row, position]
                bucket = totals.setdefault(kind, [0.0, 0.0, 0.0])
                bucket[0] += -float(lp[token])
                bucket[1] += float(int(lp.argmax()) == token)
                bucket[2] += 1
    return {kind: {"nll": round(s / n, 4), "top1": round(c / n, 4), "tokens": int(n)}
            for kind, (s, c, n) in sorted(totals.items())}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="A training recipe (YAML of TrainConfig fields).")
    parser.add_argument("--reference", required=True, help="The model that plays the episodes (hf:PATH, smollm2).")
    parser.add_argument("--models", nargs="+", required=True, help="Models to score the episodes with.")
    parser.add_argument("--split", default="test")
    parser.add_argument("--tasks", type=int, default=100, help="The split's first N tasks.")
    args = parser.parse_args(argv)

    import torch

    from agentgym.lm.local import load_for_training, resolve_model
    from agentgym.trainer.config import load_config
    from agentgym.trainer.grpo import play_recipe

    config = load_config(args.config)
    torch.set_num_threads(1)
    model, tokenizer = load_for_training(resolve_model(args.reference))
    model.eval()
    episodes = play_recipe(config, model, tokenizer, split=args.split, tasks=args.tasks, temperature=0.0,
                           system_prompt=config.system_prompt)
    with_tool = [e for e in episodes if e.tool_calls]
    report: dict[str, Any] = {"reference": args.reference, "split": args.split, "episodes": len(episodes),
                              "episodes_with_tool_call": len(with_tool), "scores": {}}
    for name in args.models:
        scorer, scorer_tokenizer = (model, tokenizer) if name == args.reference else \
            load_for_training(resolve_model(name))
        scorer.eval()
        report["scores"][name] = score(scorer, scorer_tokenizer, with_tool)
    for name, kinds in report["scores"].items():
        for kind, s in kinds.items():
            if not math.isfinite(s["nll"]):
                raise SystemExit(f"{name}: a non-finite NLL on {kind} tokens")
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
