"""Batched token-level generation for multi-turn rollouts: ``TransformersGenerator`` (CPU or GPU) and the
``Generator`` protocol a backend implements (``VLLMGenerator`` on a GPU); one ``Turn`` per row and call.

The KV cache is kept across turns: a turn's context extends the previous one, so only the new tokens (the
observation and the glue) are prefilled; finished rows are parked and the cache compacted between turns.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Generator", "StopOnText", "TransformersGenerator", "Turn"]


@dataclass(frozen=True)
class Turn:
    """One generated turn: its ids, and whether it ended with the end-of-turn token or a stop string."""

    ids: list[int]
    ended: bool
    stopped: bool
    #: the sampler's log-probability of each id, when the backend reports them
    logprobs: list[float] | None = None


class StopOnText:
    """A ``generate`` stopping criterion: stop once the new text contains any of ``stops``.

    Decodes only the last few tokens each step (a stop string of n characters spans
    at most n tokens), which costs microseconds; transformers' own ``stop_strings``
    re-derives a table over the whole vocabulary on every call (1-2 s a call here).
    """

    def __init__(self, tokenizer: Any, *, prompt_tokens: int, stops: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.prompt_tokens = prompt_tokens
        self.stops = stops
        self.window = max(len(s) for s in stops) + 2

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        start = max(self.prompt_tokens, input_ids.shape[1] - self.window)
        done = [any(s in self.tokenizer.decode(row[start:].tolist()) for s in self.stops) for row in input_ids]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def _stop_index(tokenizer: Any, ids: Sequence[int], stops: Sequence[str], eos_id: int | None) -> tuple[int, bool, bool]:
    """Where a generated row ends: (length, ended with end-of-turn, stopped at a stop string)."""
    for i, token in enumerate(ids):
        if eos_id is not None and token == eos_id:
            return i + 1, True, False
        if stops:
            window = tokenizer.decode(ids[max(0, i - 24): i + 1])
            if any(s in window for s in stops):
                return i + 1, False, True
    return len(ids), False, False


def _growing_cache(config: Any) -> Any:
    """A ``DynamicCache`` whose layers append into spare capacity instead of re-concatenating.

    transformers' ``DynamicLayer`` appends a token with ``torch.cat``: every decoding
    step copies the whole cache of every layer (gigabytes a step for 30 rows of long
    SWE-bench contexts, and as many fresh page-faulted allocations). Growing by a
    quarter at a time makes appending amortised O(new tokens) at a quarter more
    memory; the layer hands out views.
    """
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache(config=config)
    layers = getattr(cache, "layers", None)
    if layers and all(type(layer) is DynamicLayer for layer in layers):
        grow = _growing_layer_class()
        cache.layers = [grow() for _ in layers]
    return cache


@functools.cache
def _growing_layer_class() -> type:
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            import torch

            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            have = self.get_seq_length()
            total = have + key_states.shape[-2]
            buffers = getattr(self, "_buffers", None)
            # the buffers are still ours unless batch_select_indices / batch_repeat_interleave replaced the views
            if (buffers is None or have == 0 or self.keys.data_ptr() != buffers[0].data_ptr()
                    or buffers[0].shape[0] != key_states.shape[0] or total > buffers[0].shape[-2]):
                capacity = total + max(64, total // 4)  # room for ~a turn more; 2x would double the memory
                grown = []
                for old, new in ((self.keys, key_states), (self.values, value_states)):
                    shape = (*new.shape[:-2], capacity, new.shape[-1])
                    buffer = torch.empty(shape, dtype=new.dtype, device=new.device)
                    if have:
                        buffer[..., :have, :].copy_(old)
                    grown.append(buffer)
                buffers = self._buffers = tuple(grown)
            buffers[0][..., have:total, :].copy_(key_states)
            buffers[1][..., have:total, :].copy_(value_states)
            self.keys, self.values = buffers[0][..., :total, :], buffers[1][..., :total, :]
            return self.keys, self.values

    return GrowingLayer


@dataclass
class _KV:
    """A batch's key/value cache between turns: row ``i`` holds ``seqs[i]`` (its valid tokens, in order) in the
    cache slots where ``mask[i]`` is 1; other slots are padding or tokens generated after the row's turn ended."""

    cache: Any
    mask: Any
    seqs: list[list[int]]

    def replace(self, other: _KV) -> None:
        self.cache, self.mask, self.seqs = other.cache, other.mask, other.seqs


def _layers(cache: Any) -> list[Any] | None:
    """The cache's per-layer objects (``.keys``/``.values`` of shape rows x heads x slots x dim), where the installed
    transformers has them; None disables what needs them (parking, compaction) and nothing else."""
    layers = getattr(cache, "layers", None)
    if not layers or not all(getattr(layer, "keys", None) is not None and layer.keys.dim() == 4 for layer in layers):
        return None
    return layers


def _with_slots(kv: _KV, rows: Any, slots: Any | None = None) -> _KV:
    """A new cache of ``rows`` (an index tensor); with ``slots`` (rows x width), each row keeps only those slots."""
    from transformers import DynamicCache

    cache = DynamicCache()
    cache.layers = []
    for layer in _layers(kv.cache) or ():
        fresh = _growing_layer_class()()
        keys, values = layer.keys[rows], layer.values[rows]
        if slots is not None:
            index = slots[:, None, :, None].expand(-1, keys.shape[1], -1, keys.shape[3])
            keys, values = keys.gather(2, index), values.gather(2, index)
        fresh.lazy_initialization(keys, values)
        fresh.keys, fresh.values = keys, values
        cache.layers.append(fresh)
    mask = kv.mask[rows] if slots is None else kv.mask[rows].gather(1, slots)
    return _KV(cache=cache, mask=mask, seqs=[kv.seqs[r] for r in rows.tolist()])


def _take(kv: _KV, rows: list[int], *, copy: bool) -> _KV:
    """The batch rows ``rows`` of ``kv`` (``copy=False``: in the same cache object, through transformers' select)."""
    import torch

    index = torch.tensor(rows, device=kv.mask.device)
    if copy:
        return _with_slots(kv, index)
    kv.cache.batch_select_indices(index)
    return _KV(cache=kv.cache, mask=kv.mask[index], seqs=[kv.seqs[r] for r in rows])


def _compact(kv: _KV) -> None:
    """Drop the slots no row uses: each row's valid slots move, in order, to the right end of a cache as wide as
    the longest row. Keys carry their rotary positions already, so where a slot sits does not change attention."""
    import torch

    if _layers(kv.cache) is None:
        return
    width = int(kv.mask.sum(dim=1).max())
    if width == kv.mask.shape[1]:
        return
    # a stable sort puts each row's empty slots first and its valid ones after, both in order
    slots = torch.sort(kv.mask, dim=1, stable=True).indices[:, -width:]
    rows = torch.arange(len(kv.seqs), device=kv.mask.device)
    compacted = _with_slots(kv, rows, slots)
    for layer, fresh in zip(kv.cache.layers, compacted.cache.layers):
        layer.keys, layer.values = fresh.keys, fresh.values
    kv.mask = compacted.mask


def _buckets(lengths: list[int], *, slack: float = 0.25, tokens: int = 32) -> list[list[int]]:
    """Rows grouped by length, longest first: a row joins a bucket when padding it to the bucket's longest costs at
    most ``slack`` of that length or ``tokens`` tokens (less than a forward pass's fixed cost)."""
    buckets: list[list[int]] = []
    for row in sorted(range(len(lengths)), key=lambda r: -lengths[r]):
        if buckets and lengths[buckets[-1][0]] - lengths[row] <= max(tokens, slack * lengths[buckets[-1][0]]):
            buckets[-1].append(row)
        else:
            buckets.append([row])
    return [sorted(bucket) for bucket in buckets]


def _extends(context: list[int], seq: list[int]) -> bool:
    """Whether ``context`` is ``seq`` and more. Rows of a batch share a long prompt, so the tail is compared first."""
    n = len(seq)
    return n < len(context) and context[max(0, n - 16):n] == seq[-16:] and context[:n] == seq


def _merge(groups: list[tuple[list[int], _KV]], n: int) -> _KV:
    """One cache of ``n`` rows from groups of (original rows, cache), each padded on the right to the widest."""
    import torch
    import torch.nn.functional as F

    width = max(kv.mask.shape[1] for _, kv in groups)
    order = [r for rows, _ in groups for r in rows]
    back = torch.tensor(sorted(range(n), key=order.__getitem__), device=groups[0][1].mask.device)

    def padded(t: Any, dim_from_end: int) -> Any:
        missing = width - t.shape[-dim_from_end]
        return F.pad(t, (0, 0) * (dim_from_end - 1) + (0, missing)) if missing else t

    target = groups[-1][1]
    for index, layer in enumerate(_layers(target.cache) or ()):
        parts = [_layers(kv.cache)[index] for _, kv in groups]  # type: ignore[index]
        layer.keys = torch.cat([padded(p.keys, 2) for p in parts])[back]
        layer.values = torch.cat([padded(p.values, 2) for p in parts])[back]
    mask = torch.cat([padded(kv.mask, 1) for _, kv in groups])[back]
    seqs = [kv.seqs[k] for _, kv in groups for k in range(len(kv.seqs))]
    return _KV(cache=target.cache, mask=mask, seqs=[seqs[b] for b in back.tolist()])


class TransformersGenerator:
    """Turns from a ``transformers`` causal LM, a batch of contexts at a time, with the cache kept across turns.

    A decoding loop of its own rather than ``model.generate``, so that a multi-turn
    episode never recomputes what the model has already read: the prompt prefix
    all contexts share is computed once and copied to every row, and each later
    turn feeds only the tokens a row has not seen (the observation and its chat
    glue), its earlier tokens staying in the key/value cache. Rows are aligned by
    padding inside each new block; the attention mask hides padding and the tokens
    a row generated after its turn ended, and positions count only a row's own
    tokens, so each row is computed exactly as if it were alone. A context that
    extends a row of the previous call keeps that row's cache, whatever its place
    in the batch; the others (new rollouts) start afresh, sharing their common
    prefix, and both groups decode as one batch.
    """

    def __init__(self, model: Any, tokenizer: Any, *, temperature: float = 1.0, top_p: float = 1.0,
                 top_k: int = 0, on_token: Callable[[int, int], None] | None = None,
                 prefill_tokens: int = 8192, logprobs: bool = False) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        #: called as (tokens generated so far, max_new_tokens) after each generated token: live progress
        self.on_token = on_token
        #: tokens (all rows together) fed per forward pass while reading prompts and observations: bounds the
        #: attention's memory, which grows with rows x chunk x cached length
        self.prefill_tokens = prefill_tokens
        #: report each generated id's log-probability under the distribution it was drawn from (``Turn.logprobs``)
        self.logprobs = logprobs
        #: counts since construction: rows that kept the previous call's cache, rows started afresh, and tokens
        #: read before decoding (not served from the cache; a shared prefix counts once)
        self.stats = {"reused_rows": 0, "fresh_rows": 0, "prefill_tokens": 0}
        self._kv: _KV | None = None
        # transformers 5.x names the forward's cache argument ``cache`` (``past_key_values`` is deprecated)
        forward = inspect.signature(model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in forward else "past_key_values"

    def _pad_id(self) -> int:
        tokenizer = self.tokenizer
        return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def _match(self, contexts: Sequence[Sequence[int]]) -> list[int] | None:
        """For each context, the row of the previous call it extends (in order), or None for a fresh batch."""
        if self._kv is None:
            return None
        rows, j = [], 0
        for context in contexts:
            while j < len(self._kv.seqs) and not (
                    len(self._kv.seqs[j]) < len(context) and list(context[:len(self._kv.seqs[j])]) == self._kv.seqs[j]):
                j += 1
            if j == len(self._kv.seqs):
                return None
            rows.append(j)
            j += 1
        return rows

    def _assign(self, contexts: Sequence[Sequence[int]]) -> list[int | None]:
        """For each context, a row of the previous call it extends (the longest one no earlier context took), or None.

        The rows of concurrent rollouts come back in any order, a few ending and a few joining each call."""
        if self._kv is None:
            return [None] * len(contexts)
        seqs = self._kv.seqs
        longest_first = sorted(range(len(seqs)), key=lambda r: -len(seqs[r]))
        rows: list[int | None] = []
        used: set[int] = set()
        for context in map(list, contexts):
            row = next((r for r in longest_first if r not in used and _extends(context, seqs[r])), None)
            rows.append(row)
            if row is not None:
                used.add(row)
        return rows

    def _prefill(self, contexts: Sequence[Sequence[int]]) -> tuple[_KV, Any]:
        """The batch's cache after reading ``contexts``, and each row's next-token logits.

        Rows that extend the previous call's rows read only their new tokens; the others start afresh (their common
        prefix read once); the two groups are read apart and merged for decoding."""
        import torch

        rows = self._match(contexts) or self._assign(contexts)
        previous, self._kv = self._kv, None  # a failure below leaves no half-updated cache behind
        taken = [r for r in rows if r is not None]
        reused = [k for k, r in enumerate(rows) if r is not None]
        fresh = [k for k, r in enumerate(rows) if r is None]
        if previous is None or (fresh and _layers(previous.cache) is None):
            taken, reused, fresh = [], [], list(range(len(contexts)))  # this cache cannot be merged: all afresh
        self.stats["reused_rows"] += len(reused)
        self.stats["fresh_rows"] += len(fresh)
        groups, outs = [], []
        if previous is not None and reused:
            # every row back, in order (the fast path's common case): the cache serves as it is, nothing selected
            kv = previous if taken == list(range(len(previous.seqs))) else _take(previous, taken, copy=False)
            _compact(kv)
            block = [list(contexts[k][len(seq):]) for k, seq in zip(reused, kv.seqs)]
            outs.append(self._forward(kv, block, logits=True))
            groups.append((reused, kv))
        if fresh:
            kv, block = self._start([contexts[k] for k in fresh])
            outs.append(self._forward(kv, block, logits=True))
            groups.append((fresh, kv))
        if len(groups) == 1:
            return groups[0][1], outs[0]
        back = sorted(range(len(contexts)), key=(reused + fresh).__getitem__)
        return _merge(groups, len(contexts)), torch.cat(outs)[torch.tensor(back, device=outs[0].device)]

    def _forward(self, kv: _KV, block: list[list[int]], *, logits: bool) -> Any:
        """Feed ``block[i]`` to row ``i``; the last position's logits.

        Rows are fed in buckets of similar length, so that a short observation is not padded to the longest one
        (reading a token costs the same alone as in a batch; padding costs as much as a token).
        """
        import torch

        self.stats["prefill_tokens"] += sum(len(b) for b in block)
        buckets = _buckets([len(b) for b in block])
        if len(buckets) == 1 or _layers(kv.cache) is None:
            return self._forward_padded(kv, block, logits=logits)
        groups, rows_logits = [], [None] * len(block)
        for rows in buckets:
            sub = _take(kv, rows, copy=True)
            out = self._forward_padded(sub, [block[r] for r in rows], logits=logits)
            groups.append((rows, sub))
            for k, r in enumerate(rows):
                rows_logits[r] = out[k] if logits else None
        kv.replace(_merge(groups, len(block)))
        return torch.stack(rows_logits) if logits else None  # type: ignore[arg-type]

    def _forward_padded(self, kv: _KV, block: list[list[int]], *, logits: bool) -> Any:
        """Feed ``block[i]`` to row ``i``, left-padded to one width, in chunks; the last position's logits."""
        import torch

        device = kv.mask.device
        width = max(len(b) for b in block)
        ids = torch.tensor([[self._pad_id()] * (width - len(b)) + list(b) for b in block], device=device)
        new_mask = torch.tensor([[0] * (width - len(b)) + [1] * len(b) for b in block], device=device)
        start = kv.mask.sum(dim=1, keepdim=True)
        positions = (start + new_mask.cumsum(dim=1) - 1).clamp(min=0)
        out, chunk = None, max(32, self.prefill_tokens // len(block))
        for lo in range(0, width, chunk):
            hi = min(width, lo + chunk)
            kv.mask = torch.cat([kv.mask, new_mask[:, lo:hi]], dim=1)
            out = self.model(input_ids=ids[:, lo:hi], attention_mask=kv.mask, position_ids=positions[:, lo:hi],
                             use_cache=True, logits_to_keep=1, **{self._cache_kwarg: kv.cache})
        for seq, tokens in zip(kv.seqs, block):
            seq.extend(tokens)
        return out.logits[:, -1, :].float() if logits else None

    def _start(self, contexts: Sequence[Sequence[int]]) -> tuple[_KV, list[list[int]]]:
        """A fresh cache holding the prefix every context shares (computed once), and each row's remainder."""
        import torch

        shared = min(len(c) for c in contexts) - 1  # every row keeps at least one token to feed
        first = contexts[0]
        for context in contexts[1:]:
            shared = next((k for k in range(shared) if context[k] != first[k]), shared)
        device = next(self.model.parameters()).device
        kv = _KV(cache=_growing_cache(self.model.config), mask=torch.zeros((1, 0), dtype=torch.long,
                                                                               device=device), seqs=[[]])
        if shared > 0:
            self._forward(kv, [list(first[:shared])], logits=False)
        if len(contexts) > 1:
            kv.cache.batch_repeat_interleave(len(contexts))
            kv.mask = kv.mask.repeat(len(contexts), 1)
        kv.seqs = [list(first[:shared]) for _ in contexts]
        return kv, [list(c[shared:]) for c in contexts]

    def _pick(self, logits: Any, generator: Any) -> tuple[Any, Any]:
        """Each row's next id, and (with ``logprobs``) its log-probability under the distribution it came from."""
        import torch

        if self.temperature <= 0:
            picked = logits.argmax(dim=-1)
            if not self.logprobs:
                return picked, None
            return picked, torch.log_softmax(logits, dim=-1).gather(-1, picked[:, None])[:, 0]
        logits = logits / self.temperature
        if self.top_k > 0:
            kth = torch.topk(logits, min(self.top_k, logits.shape[-1]), dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        probs = torch.softmax(logits, dim=-1)
        if self.top_p < 1.0:
            sorted_probs, order = probs.sort(dim=-1, descending=True)
            # keep the smallest set whose mass reaches top_p (the most likely token always stays)
            drop = sorted_probs.cumsum(dim=-1) - sorted_probs > self.top_p
            sorted_probs = sorted_probs.masked_fill(drop, 0.0)
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        picked = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        if not self.logprobs:
            return picked, None
        # top_p left the kept mass unnormalised (multinomial does not mind): the sampler's probability is p / sum
        return picked, probs.gather(-1, picked[:, None])[:, 0].log() - probs.sum(dim=-1).log()

    def generate(self, contexts: Sequence[Sequence[int]], *, stops: Sequence[Sequence[str]],
                 max_new_tokens: int | Sequence[int], seed: int) -> list[Turn]:
        """Each row's turn: at most ``max_new_tokens`` ids (one number for every row, or one per row)."""
        import torch

        eos = self.tokenizer.eos_token_id
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                kv, logits = self._prefill(contexts)
                generator = torch.Generator(device=logits.device).manual_seed(seed)
                turns = self._decode(kv, logits, stops, max_new_tokens, generator, eos)
                self._kv = kv
        finally:
            self.model.train(was_training)
        return turns

    def _decode(self, kv: _KV, logits: Any, stops: Sequence[Sequence[str]], max_new_tokens: int | Sequence[int],
                generator: Any, eos: int | None) -> list[Turn]:
        """Generate until every row stops; rows whose turn ended leave the batch (parked) once they are half of it,
        so a few long answers do not make every finished row pay for each step, and come back at the end."""
        n = len(kv.seqs)
        limits = [max_new_tokens] * n if isinstance(max_new_tokens, int) else list(max_new_tokens)
        if len(limits) != n or min(limits, default=1) < 1:
            raise ValueError(f"max_new_tokens: one number >= 1, or one per row ({n}); got {max_new_tokens!r}.")
        max_new_tokens = max(limits, default=1)
        generated: list[list[int]] = [[] for _ in range(n)]
        logprobs: list[list[float]] = [[] for _ in range(n)]
        ended, stopped, live, cut = [False] * n, [False] * n, [True] * n, [False] * n
        active, parked = list(range(n)), []  # the original row of each batch row; the rows set aside
        for step in range(max_new_tokens):
            ids, sampler_logprobs = self._pick(logits, generator)
            picked = ids.tolist()
            picked_logprobs = sampler_logprobs.tolist() if sampler_logprobs is not None else None
            for j, i in enumerate(active):
                if not live[i]:
                    continue
                generated[i].append(picked[j])
                if picked_logprobs is not None:
                    logprobs[i].append(picked_logprobs[j])
                if eos is not None and picked[j] == eos:
                    ended[i], live[i] = True, False
                elif stops[i] and any(s in self.tokenizer.decode(generated[i][-24:]) for s in stops[i]):
                    stopped[i], live[i] = True, False
                elif len(generated[i]) >= limits[i]:
                    live[i], cut[i] = False, True  # its own limit: truncated
            if self.on_token is not None:
                self.on_token(step + 1, max_new_tokens)
            if not any(live) or step + 1 == max_new_tokens:
                break
            # a row whose turn ended this step still takes its last token; one that ended earlier takes padding, and
            # so does one cut at its own limit (as at the batch's: a context that goes on from its last id extends it)
            fed = [live[i] or (len(generated[i]) == step + 1 and not cut[i]) for i in active]
            idle = [j for j, f in enumerate(fed) if not f]
            if _layers(kv.cache) is not None and len(idle) >= max(1, len(active) // 2):
                keep = [j for j, f in enumerate(fed) if f]
                parked.append(([active[j] for j in idle], _take(kv, idle, copy=True)))
                kv.replace(_take(kv, keep, copy=False))
                active = [active[j] for j in keep]
                picked, fed = [picked[j] for j in keep], [True] * len(keep)
            feed = [[picked[j]] if f else [self._pad_id()] for j, f in enumerate(fed)]
            logits = self._step(kv, feed, fed)
        if parked:
            kv.replace(_merge([*parked, (active, kv)], n))
        return [Turn(ids=generated[i], ended=ended[i], stopped=stopped[i],
                     logprobs=logprobs[i] if self.logprobs else None) for i in range(n)]

    def _step(self, kv: _KV, feed: list[list[int]], valid: list[bool]) -> Any:
        import torch

        device = kv.mask.device
        ids = torch.tensor(feed, device=device)
        step_mask = torch.tensor([[1 if v else 0] for v in valid], device=device)
        positions = kv.mask.sum(dim=1, keepdim=True)
        kv.mask = torch.cat([kv.mask, step_mask], dim=1)
        out = self.model(input_ids=ids, attention_mask=kv.mask, position_ids=positions, use_cache=True,
                         logits_to_keep=1, **{self._cache_kwarg: kv.cache})
        for seq, tokens, v in zip(kv.seqs, feed, valid):
            if v:
                seq.extend(tokens)
        return out.logits[:, -1, :].float()


def _seed(*parts: Any) -> int:
    return int.from_bytes(hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=4).digest(), "big")


class Generator(Protocol):
    """What plays the model's turns: :class:`TransformersGenerator`, or ``VLLMGenerator`` on a GPU."""

    tokenizer: Any

    def generate(self, contexts: Sequence[Sequence[int]], *, stops: Sequence[Sequence[str]],
                 max_new_tokens: int | Sequence[int], seed: int) -> list[Turn]: ...
