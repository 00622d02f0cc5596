"""Local pages of results: the trajectory viewer (one self-contained HTML file of episodes) and a static server
for the built leaderboard.

The viewer reads eval results files (one ``EpisodeResult`` per line: the transcript, reward and the
verifier's details) and the trainer's ``samples.jsonl`` (the model's turns of sampled episodes). The page has
no network at all: its CSS and script are inline, a Content-Security-Policy pins the one script by hash and
allows no fetches, and every string of the data (model output can hold HTML) reaches the page only as JSON
that the script puts in text nodes.

Training masks every token that the env wrote (the prompt, observations and the chat glue around them) out of
the loss: the page marks those turns ``masked``. Where a record carries token-level data (``tokens``, the
decoded tokens, or ``completion_ids``, with ``mask``: 1 = trained, as in ``agentgym.lm.rollout.Episode``)
its tokens are shown in runs, the masked ones marked.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DataError
from agentgym.eval.results import load_results

__all__ = ["board_server", "build_viewer", "episode_view", "read_episodes"]

_ROLES = {"user": "prompt", "system": "prompt", "assistant": "model", "tool": "observation"}
# Tool calls as the action formats write them: hermes <tool_call>{json}</tool_call>, tags <name>args</name>
_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_TAG = re.compile(r"<([A-Za-z_][\w-]*)>(.*?)</\1>", re.DOTALL)
_NOT_CALLS = {"think", "tool_call", "tool_response", "information", "result", "output"}


def tool_calls(text: str) -> list[str]:
    """The tool calls (and final answer) in a model turn, one line each.

    >>> tool_calls('I will look. <search>capital of Peru</search>')
    ['search: capital of Peru']
    >>> tool_calls('<tool_call>{"name": "bash", "arguments": {"cmd": "ls"}}</tool_call>')
    ['bash: {"cmd": "ls"}']
    """
    calls = []
    for body in _HERMES.findall(text):
        try:
            call = json.loads(body)
            calls.append(f"{call['name']}: {json.dumps(call.get('arguments', {}), ensure_ascii=False)}")
        except (json.JSONDecodeError, KeyError, TypeError):
            calls.append(f"malformed tool call: {body}")
    without = _HERMES.sub("", text)
    calls += [f"{name}: {body.strip()}" for name, body in _TAG.findall(without) if name.lower() not in _NOT_CALLS]
    return calls


def _token_runs(record: Mapping[str, Any], decode: Callable[[list[int]], str] | None = None) -> list[list[Any]] | None:
    """``[[text, trained], ...]``, consecutive tokens of one mask merged; None without token-level data. Token ids
    are shown as text when ``decode`` (the model's tokenizer) is given, else as numbers."""
    mask = record.get("mask")
    tokens = record.get("tokens") if isinstance(record.get("tokens"), list) else record.get("completion_ids")
    samples = record.get("samples")
    if mask is None and isinstance(samples, list) and samples and isinstance(samples[-1], Mapping):
        # an agent's episode: its last leaf, ids with the loss mask the gateway recorded (the whole conversation
        # as the model read it: what the agent sent, and what the model sampled)
        mask, tokens = samples[-1].get("loss_mask"), samples[-1].get("token_ids")
        if not isinstance(mask, list) or not isinstance(tokens, list) or len(mask) != len(tokens) or not tokens:
            return None
        return _id_runs(tokens, mask, decode)
    if not isinstance(mask, list) or not isinstance(tokens, list) or len(mask) != len(tokens) or not tokens:
        return None
    if tokens is record.get("completion_ids"):
        return _id_runs(tokens, mask, decode)
    return _runs([str(token) for token in tokens], mask)


def _id_runs(ids: list[Any], mask: list[Any], decode: Callable[[list[int]], str] | None) -> list[list[Any]]:
    if decode is None or not all(isinstance(i, int) for i in ids):
        return _runs([f"{i} " for i in ids], mask)
    runs = _runs([[i] for i in ids], mask)
    return [[decode(run), bit] for run, bit in runs]


def _runs(texts: list[Any], mask: list[Any]) -> list[list[Any]]:
    runs: list[list[Any]] = []
    for text, bit in zip(texts, mask):
        if runs and runs[-1][1] == bool(bit):
            runs[-1][0] += text
        else:
            runs.append([text, bool(bit)])
    return runs


def _decoders(tokenizer: str | None) -> Callable[[Mapping[str, Any]], Callable[[list[int]], str] | None]:
    """For each record, how to show its token ids as text: ``tokenizer`` (a model name ``agentgym train --model``
    takes, local files only) for every record; ``auto``: the record's own model where it can be loaded here;
    ``none`` or None: ids as numbers."""
    loaded: dict[str, Callable[[list[int]], str] | None] = {}

    def load(model: str) -> Callable[[list[int]], str] | None:
        if model not in loaded:
            from agentgym.eval.sft_data import load_tokenizer

            try:
                found = load_tokenizer(model)
            except Exception as e:  # noqa: BLE001 - not loadable here: ids stay numbers, and the page says why
                if tokenizer not in (None, "auto", "none"):
                    raise ConfigError(f"--tokenizer {model}: {e}") from e
                found = None
            loaded[model] = None if found is None else (lambda ids, t=found: t.decode(ids))
        return loaded[model]

    def for_record(record: Mapping[str, Any]) -> Callable[[list[int]], str] | None:
        if tokenizer in (None, "none"):
            return None
        model = record.get("model") if tokenizer == "auto" else tokenizer
        if not isinstance(model, str) or not (model == "smollm2" or model.startswith("hf:")):
            return None
        return load(model)

    return for_record


def _turn(role: str, text: str) -> dict[str, Any]:
    turn: dict[str, Any] = {"role": role, "text": text}
    if role == "model":
        turn["calls"] = tool_calls(text)
    return turn


def episode_view(record: Mapping[str, Any], *, source: str,
                 decode: Callable[[list[int]], str] | None = None) -> dict[str, Any]:
    """One results or samples record as the page shows it: a heading, outcome, turns and verifier details."""
    if isinstance(record.get("transcript"), list):
        turns = [_turn(_ROLES.get(str(m.get("role")), "prompt"), str(m.get("content", "")))
                 for m in record["transcript"]]
        meta = [f"{k} {record[k]}" for k in ("policy", "model", "split", "seed") if record.get(k) not in (None, "")]
        if record.get("sample"):  # the k-th rollout of a task in a --samples run
            meta.append(f"sample {record['sample']}")
        env, task, correct = str(record.get("env_id") or "?"), record.get("task_id"), record.get("correct")
        steps = record["turns"] if isinstance(record.get("turns"), int) else sum(t["role"] == "model" for t in turns)
    elif isinstance(record.get("turns"), list):  # a trainer sample: the model's turns only
        turns = [_turn("model", str(text)) for text in record["turns"]]
        meta = [f"step {record['step']}"] if "step" in record else []
        env, task, correct = str(record.get("env_id") or "training samples"), record.get("task"), record.get("success")
        steps = len(turns)
    else:
        raise DataError(f"{source}: a record with neither 'transcript' (an eval result) nor 'turns' (a trainer "
                        f"sample); keys: {sorted(record)[:8]}. Pass eval results files or samples.jsonl.")
    verification = record.get("verification")
    return {"source": source, "env": env, "task": "" if task is None else str(task), "meta": " · ".join(meta),
            "steps": steps,
            "reward": float(record.get("reward") or 0.0), "correct": bool(correct),
            "error": None if record.get("error") is None else str(record["error"]), "turns": turns,
            "verification": json.dumps(verification, indent=2, ensure_ascii=False, sort_keys=True)
            if verification else None,
            "tokens": _token_runs(record, decode)}


def _files(path: Path) -> list[Path]:
    if path.is_dir():  # a training run's directory holds samples.jsonl; else every results file in it
        found = [path / "samples.jsonl"] if (path / "samples.jsonl").is_file() else sorted(path.glob("*.jsonl"))
        if not found:
            raise ConfigError(f"{path} holds no samples.jsonl and no *.jsonl results files.")
        return found
    if not path.is_file():
        raise ConfigError(f"No results file {path}; pass eval results (.jsonl) or a trainer's samples.jsonl.")
    return [path]


def read_episodes(paths: Iterable[str | Path], *, tokenizer: str | None = "auto") -> list[dict[str, Any]]:
    """Every episode of the given results files, samples files or directories of them, in file order; token ids
    decoded as ``_decoders(tokenizer)`` says."""
    decoder = _decoders(tokenizer)
    episodes = []
    for path in paths:
        for file in _files(Path(path)):
            for number, record in enumerate(load_results(file), 1):
                if not isinstance(record, dict):
                    raise DataError(f"{file}:{number} is not a JSON object.")
                if "warning" in record and "turns" not in record and "transcript" not in record:
                    continue  # the trainer's warning rows (metrics.jsonl passed by mistake)
                episodes.append(episode_view(record, source=f"{file.name}:{number}", decode=decoder(record)))
    return episodes


def _json_for_script(data: Any) -> str:
    # In a <script> block only "</script" and "<!--" could end or confuse it: no "<", ">" or "&" survive
    text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def build_viewer(paths: Iterable[str | Path], out: str | Path, *, tokenizer: str | None = "auto") -> tuple[Path, int]:
    """Write the viewer page of ``paths``' episodes to ``out``; returns the path and the episode count."""
    episodes = read_episodes(paths, tokenizer=tokenizer)
    script_hash = base64.b64encode(hashlib.sha256(_JS.encode()).digest()).decode()
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    page = "\n".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>agentgym episodes</title><style>{_CSS}</style></head><body>",
        "<h1>agentgym episodes</h1>",
        _FILTERS,
        ('<p class="legend"><span class="turn-role model">model</span> trained on · '
         '<span class="turn-role masked">prompt / observation</span> masked out of the loss in training</p>'),
        '<div id="episodes"></div>',
        f'<script type="application/json" id="data">{_json_for_script(episodes)}</script>',
        f"<script>{_JS}</script></body></html>\n"])
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out, len(episodes)


def board_server(directory: str | Path, *, host: str = "127.0.0.1", port: int = 8000) -> http.server.HTTPServer:
    """A static HTTP server of a built leaderboard directory (``serve_forever`` it); port 0 picks a free one."""
    directory = Path(directory)
    if not (directory / "index.html").is_file():
        raise ConfigError(f"{directory} has no index.html; build it first: agentgym leaderboard build --dir "
                          f"{directory}")
    handler = functools.partial(_QuietHandler, directory=str(directory))
    try:
        return http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as e:
        raise ConfigError(f"Cannot serve on {host}:{port}: {e.strerror or e}. Pass another --port, or stop what is "
                          "using this one.") from e


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files without a log line per request on stderr."""

    def log_message(self, *args: Any) -> None:
        pass


_FILTERS = ('<form class="filters" id="filters">'
            '<label>env <select id="f-env"><option value="">all</option></select></label>'
            '<label>outcome <select id="f-outcome"><option value="">any</option><option value="correct">correct'
            '</option><option value="incorrect">incorrect</option></select></label>'
            '<label>reward ≥ <input id="f-reward" type="number" step="0.1" size="5"></label>'
            '<label>error <select id="f-error"><option value="">any</option><option value="yes">errored</option>'
            '<option value="no">no error</option></select></label>'
            '<label>text <input id="f-text" type="search" size="18"></label>'
            '<span id="count"></span></form>')

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#222}
h1{font-size:1.4em}.filters{display:flex;flex-wrap:wrap;gap:.6em 1.2em;align-items:center;margin:.5em 0 1em}
#count{color:#666}.legend{color:#555;font-size:.9em}
details.episode{border:1px solid #ccc;border-radius:6px;margin:.4em 0;background:#fff}
details.episode>summary{cursor:pointer;padding:.45em .7em;display:flex;gap:1em;flex-wrap:wrap;align-items:baseline}
details.episode>summary::before{content:'\\25b8';color:#888}details.episode[open]>summary::before{content:'\\25be'}
details.episode[open]>summary{border-bottom:1px solid #ddd;background:#f6f6f6}
.env{font-weight:600}.task{color:#555}.meta{color:#777;font-size:.9em}
.badge{border-radius:4px;padding:0 .4em;font-size:.85em}.ok{background:#d6f5d6}.bad{background:#f5dcdc}
.err{background:#b00020;color:#fff}.body{padding:.5em .8em}
.turn{margin:.5em 0;border-left:4px solid #0072b2;padding:.2em .6em}.turn.masked{border-color:#bbb;background:#fafafa}
.turn-role{font-size:.8em;text-transform:uppercase;letter-spacing:.04em;color:#0072b2}
.turn-role.masked{color:#888}pre{white-space:pre-wrap;word-break:break-word;margin:.2em 0;font-size:.9em}
.calls{margin:.2em 0 .2em 1em;padding:0;list-style:square;color:#7a3e00}
.verifier{border-color:#009e73}.error-line{color:#b00020;white-space:pre-wrap}
.tokens span.trained{background:#dcebf7}.tokens span.masked{background:#eee;color:#888;text-decoration:line-through}
"""

_JS = """
(function(){
  const data = JSON.parse(document.getElementById('data').textContent);
  const list = document.getElementById('episodes');
  const f = {env: document.getElementById('f-env'), outcome: document.getElementById('f-outcome'),
             reward: document.getElementById('f-reward'), error: document.getElementById('f-error'),
             text: document.getElementById('f-text')};
  function el(tag, cls, text){ const e = document.createElement(tag); if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text; return e; }
  [...new Set(data.map(d => d.env))].sort().forEach(env => f.env.appendChild(el('option', '', env)));
  function turnNode(t){
    const masked = t.role !== 'model';
    const box = el('div', 'turn ' + t.role + (masked ? ' masked' : ''));
    box.appendChild(el('div', 'turn-role' + (masked ? ' masked' : ''), t.role + (masked ? ' · masked' : '')));
    box.appendChild(el('pre', '', t.text));
    if (t.calls && t.calls.length){ const ul = el('ul', 'calls');
      t.calls.forEach(c => ul.appendChild(el('li', 'call', c))); box.appendChild(ul); }
    return box;
  }
  function fill(body, d){
    d.turns.forEach(t => body.appendChild(turnNode(t)));
    if (d.tokens){ const box = el('div', 'turn tokens'); box.appendChild(el('div', 'turn-role', 'tokens'));
      const pre = el('pre');
      d.tokens.forEach(r => pre.appendChild(el('span', r[1] ? 'trained' : 'masked', r[0])));
      box.appendChild(pre); body.appendChild(box); }
    if (d.verification){ const box = el('div', 'turn verifier');
      box.appendChild(el('div', 'turn-role', 'verifier')); box.appendChild(el('pre', '', d.verification));
      body.appendChild(box); }
    if (d.error) body.appendChild(el('div', 'error-line', 'error: ' + d.error));
  }
  const items = data.map((d, i) => {
    const det = el('details', 'episode'); det.dataset.index = i; det.dataset.env = d.env;
    det.dataset.reward = d.reward; det.dataset.correct = d.correct; det.dataset.error = d.error ? 'yes' : 'no';
    const s = el('summary');
    s.appendChild(el('span', 'env', d.env)); s.appendChild(el('span', 'task', d.task));
    s.appendChild(el('span', 'badge ' + (d.correct ? 'ok' : 'bad'), (d.correct ? 'correct' : 'incorrect') +
                     ' · reward ' + (+d.reward.toFixed(4))));
    s.appendChild(el('span', 'meta', d.steps + ' turns' + (d.meta ? ' · ' + d.meta : '') + ' · ' + d.source));
    if (d.error) s.appendChild(el('span', 'badge err', 'error'));
    det.appendChild(s);
    const body = el('div', 'body'); det.appendChild(body);
    det.addEventListener('toggle', () => { if (det.open && !body.firstChild) fill(body, d); });
    list.appendChild(det);
    return {det, d, haystack: (d.task + '\\n' + d.turns.map(t => t.text).join('\\n')).toLowerCase()};
  });
  function apply(){
    const min = f.reward.value === '' ? null : parseFloat(f.reward.value);
    const text = f.text.value.toLowerCase(); let shown = 0;
    items.forEach(({det, d, haystack}) => {
      const ok = (!f.env.value || d.env === f.env.value) &&
        (!f.outcome.value || (f.outcome.value === 'correct') === d.correct) &&
        (min === null || isNaN(min) || d.reward >= min) &&
        (!f.error.value || (f.error.value === 'yes') === !!d.error) && (!text || haystack.includes(text));
      det.hidden = !ok; shown += ok;
    });
    document.getElementById('count').textContent = shown + ' of ' + items.length + ' episodes';
  }
  Object.values(f).forEach(x => x.addEventListener('input', apply));
  document.getElementById('filters').addEventListener('submit', e => e.preventDefault());
  apply();
})();
"""
