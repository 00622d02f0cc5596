"""The leaderboard: one summary record per eval run, and the README table and static page built from them.

Layout under ``leaderboard/``::

    runs/<suite>/<model-or-policy slug>-<YYYY-MM-DD>.json   one record per submitted run (make_submission)
    README.md                                                a ranked markdown table per suite (build_leaderboard)
    index.html                                               the same, sortable, with SVG charts; no network

Every number the page shows is recomputed from the run records, and every
string in them (model names come from users) is escaped before it is written.

Only complete runs are ranked: a record with errored or unplayed episodes (written
with ``--allow-incomplete``; ``complete: false``, or any env with ``errors``) is listed
below the ranking, unranked. Tied rows (the same mean success and mean reward) share
a rank, shown as ``=N``. Records of schema 1 (before ``complete``, ``scored`` and
pass@k) still load: a record without errors counts as complete.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from agentgym.errors import ConfigError, DataError
from agentgym.eval.filenames import slug
from agentgym.eval.stats import mean_ci, over_tasks, sample_metrics, wilson_ci
from agentgym.eval.stats import per_task as per_task_counts
from agentgym.verifiers.budget import over_budget

__all__ = ["build_leaderboard", "is_complete", "make_submission", "mean_ci", "wilson_ci", "write_submission"]

#: 2 added ``complete``, ``planned``, ``fingerprint``, ``samples`` and, per env, ``scored``, ``pass_at_k``,
#: ``mean_at_k``, ``per_task``; success and reward became means over the scored (not errored) episodes
SCHEMA = 2
DEFAULT_ACTION_FORMAT = "tags"
_PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")  # Okabe-Ito


def _r(x: float) -> float:
    return round(x, 4)


def _env_aggregate(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(episodes)
    scored = [e for e in episodes if not e.get("error")]
    m = len(scored)
    successes = sum(bool(e.get("correct")) for e in scored)
    rates = over_tasks(scored)  # the intervals count tasks: a task's repeats are not independent evidence
    has_tokens = any(e.get("prompt_tokens") is not None or e.get("completion_tokens") is not None
                     for e in episodes)
    tokens = [(e.get("prompt_tokens") or 0) + (e.get("completion_tokens") or 0) for e in episodes]
    versions = sorted({str(e["env_version"]) for e in episodes if e.get("env_version") is not None})
    if len(versions) > 1:
        raise ConfigError(f"{episodes[0]['env_id']}: results mix env versions {versions}; "
                          "submit one run per env version.")
    samples = sample_metrics(episodes)
    return {
        "env_version": versions[0] if versions else None,
        "episodes": n,
        # success and reward are over the scored episodes: an errored one is no evidence about the policy
        "scored": m,
        "successes": successes,
        "tasks": rates["tasks"],
        "success_rate": _r(rates["success_rate"]),
        "success_ci": [_r(x) for x in rates["success_ci"]],
        "mean_reward": _r(rates["mean_reward"]),
        "reward_ci": [_r(x) for x in rates["reward_ci"]],
        "mean_turns": _r(sum(int(e.get("turns", 0)) for e in episodes) / n),
        "mean_tool_calls": _r(sum(int(e.get("tool_calls", 0)) for e in episodes) / n),
        "mean_tokens": _r(sum(tokens) / n) if has_tokens else None,
        "errors": n - m,
        "verifier_over_budget": sum(over_budget(e.get("verification")) for e in episodes),
        # how the verdicts were made, where the verifier says (SWEBench: "isolated" or "in-process")
        "isolation": _isolation_counts(scored),
        # [turns, 1 if solved else 0] per episode, in episode order: enough for a success-vs-turns plot
        "turns_correct": [[int(e.get("turns", 0)), int(bool(e.get("correct")))] for e in episodes],
        "samples": samples["k"],
        "pass_at_k": None if samples["pass_at_k"] is None else _r(samples["pass_at_k"]),
        "mean_at_k": None if samples["mean_at_k"] is None else _r(samples["mean_at_k"]),
        # [correct, scored] samples per task (the entry's episode number)
        "per_task": per_task_counts(episodes),
    }


def _isolation_counts(episodes: list[dict[str, Any]]) -> dict[str, int] | None:
    """How many episodes each grading path scored (``verification.details.isolation``); None where none says."""
    paths = [details.get("isolation") for e in episodes
             if isinstance(details := (e.get("verification") or {}).get("details"), dict)]
    counts = {str(p): paths.count(p) for p in sorted({p for p in paths if p})}
    return counts or None


def _group_by_env(results: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_env: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        if not result.get("env_id"):
            raise ConfigError("every result needs an env_id; pass EpisodeResult.as_dict() records.")
        # a named suite entry (e.g. MathTool's arithmetic rung) is its own column
        by_env[result.get("entry") or result["env_id"]].append(result)
    for env_id, episodes in by_env.items():
        numbers = [(e["episode"], e.get("sample") or 0) for e in episodes if e.get("episode") is not None]
        if len(numbers) != len(set(numbers)):
            raise ConfigError(f"{env_id}: an episode number (and sample) appears twice in the results; "
                              "deduplicate the results file before submitting.")
        if len(numbers) == len(episodes):
            episodes.sort(key=lambda e: (e["episode"], e.get("sample") or 0))
    return dict(sorted(by_env.items()))


def _parse_date(date: str) -> datetime:
    try:
        return datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"date must be ISO 8601 (e.g. 2025-06-01), got {date!r}.") from None


def make_submission(results: list[dict[str, Any]], *, suite: str, suite_version: str, policy: str,
                    model: str | None, sampling: Mapping[str, Any] | None, date: str,
                    agentgym_version: str, git_commit: str | None,
                    protocol_flags: Mapping[str, Any] | None = None, planned: int | None = None,
                    fingerprint: str | None = None, name: str | None = None) -> dict[str, Any]:
    """The summary record of one run of ``suite``: per-env aggregates, provenance and flags.

    ``planned`` is how many episodes the run's plan had (default: as many as
    ``results``); the record is ``complete`` when all were played and none
    errored. ``fingerprint`` is the model's (``agentgym.eval.fingerprint``).

    ``results`` are ``EpisodeResult.as_dict()`` records. ``protocol_flags`` says how
    the run departed from the suite's protocol: ``{"env_kwargs": {...},
    "action_format": "tags"}`` (both optional). ``reproducible`` means greedy
    decoding (temperature 0, or a policy without a model) and a recorded git
    commit, and one compute path for every episode that records one (``compute``: each distinct kernel path,
    dtype and batch size of a local model's episodes, ``agentgym.lm.compute``; greedy text can differ across
    them); ``default_protocol`` means no env kwargs and the default action format.
    """
    if not results:
        raise ConfigError("make_submission needs at least one episode result.")
    if not suite.strip() or not policy.strip():
        raise ConfigError("suite and policy must be non-empty names.")
    _parse_date(date)
    protocol = dict(protocol_flags or {})
    env_kwargs = dict(protocol.get("env_kwargs") or {})
    action_format = protocol.get("action_format") or env_kwargs.get("action_format") or DEFAULT_ACTION_FORMAT
    greedy = model is None or (sampling is not None and float(sampling.get("temperature", 1.0)) == 0.0)
    envs = {env_id: _env_aggregate(episodes) for env_id, episodes in _group_by_env(results).items()}
    planned = len(results) if planned is None else planned
    errors = sum(e["errors"] for e in envs.values())
    compute = _compute_paths(results)
    return {
        "schema": SCHEMA,
        "complete": errors == 0 and planned <= len(results),
        "planned": planned,
        "fingerprint": fingerprint,
        "samples": max(e["samples"] for e in envs.values()),
        "suite": suite,
        "suite_version": suite_version,
        "policy": policy,
        "model": model,
        "name": name or None,
        "sampling": dict(sampling) if sampling is not None else None,
        "date": date,
        "agentgym_version": agentgym_version,
        "git_commit": git_commit or None,
        "protocol": {**protocol, "env_kwargs": env_kwargs, "action_format": action_format},
        "compute": compute,
        "flags": {"reproducible": bool(greedy and git_commit and len(compute) <= 1),
                  "default_protocol": not env_kwargs and action_format == DEFAULT_ACTION_FORMAT},
        "envs": envs,
    }


def _compute_paths(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct (kernel path, dtype, batch size) of the episodes that record one, in a stable order."""
    seen = {json.dumps({k: c.get(k) for k in ("kernel", "dtype", "batch_size")}, sort_keys=True)
            for r in results if isinstance(c := r.get("compute"), dict)}
    return [json.loads(s) for s in sorted(seen)]


def write_submission(submission: Mapping[str, Any], leaderboard_dir: str | Path) -> Path:
    """Write ``runs/<suite>/<model-or-policy>-<date>.json``; a different run of the same day gets ``-2``, ``-3``..."""
    text = json.dumps(submission, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    folder = Path(leaderboard_dir) / "runs" / slug(submission["suite"])
    stem = f"{slug(submission.get('name') or submission['model'] or submission['policy'])}-{_parse_date(submission['date']).date()}"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        path = folder / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
        if not path.exists() or path.read_text(encoding="utf-8") == text:
            path.write_text(text, encoding="utf-8")
            return path
    raise ConfigError(f"{folder} already holds 999 runs named {stem}; pick another date or name.")


# ---------------------------------------------------------------- reading runs


def _load_run(path: Path) -> dict[str, Any]:
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: not a readable JSON run record ({e}).") from e
    missing = {"suite", "policy", "date", "envs", "flags"} - set(run) if isinstance(run, dict) else {"a JSON object"}
    if missing:
        raise DataError(f"{path}: missing {sorted(missing)}; write runs with `agentgym eval --submit`.")
    if not run["envs"] or not all(isinstance(e, dict) and e.get("episodes") for e in run["envs"].values()):
        raise DataError(f"{path}: every env needs at least one episode.")
    return run


def _name(run: Mapping[str, Any]) -> str:
    return str(run.get("name") or run.get("model") or run["policy"])


_SHORT_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _precision(run: Mapping[str, Any]) -> str:
    """What a local model's episodes computed in (``fp32``, ``bf16``; ``fp32/bf16`` for a mixed run), from the
    record's compute paths; "" for a run without one (an API model, a policy without a model)."""
    dtypes = sorted({str(c["dtype"]) for c in run.get("compute") or [] if isinstance(c, dict) and c.get("dtype")})
    return "/".join(_SHORT_DTYPES.get(d, d) for d in dtypes)


def _display_name(run: Mapping[str, Any]) -> str:
    """The row's name with its precision, unless the name says it already (a bf16 run's default name does)."""
    name, precision = _name(run), _precision(run)
    return f"{name} · {precision}" if precision and precision not in name else name


def _mean_success(run: Mapping[str, Any]) -> float:
    rates = [e["success_rate"] for e in run["envs"].values()]
    return sum(rates) / len(rates)


def _mean_reward(run: Mapping[str, Any]) -> float:
    rewards = [e["mean_reward"] for e in run["envs"].values()]
    return sum(rewards) / len(rewards)


def _errors(run: Mapping[str, Any]) -> int:
    return sum(int(e.get("errors") or 0) for e in run["envs"].values())


def is_complete(run: Mapping[str, Any]) -> bool:
    """Whether a run record may be ranked: every planned episode played, none errored (schema-1 records have
    no ``complete`` field; their errors decide)."""
    return bool(run.get("complete", True)) and _errors(run) == 0


def _ranked_suites(leaderboard_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Runs grouped by suite: complete runs best first (mean success over the run's envs, then mean reward,
    then name), then the incomplete ones, which are not ranked."""
    suites: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in sorted((leaderboard_dir / "runs").glob("**/*.json")):
        run = _load_run(path)
        suites[_table(run)].append(run)
    for runs in suites.values():
        runs.sort(key=lambda r: (not is_complete(r), -_mean_success(r), -_mean_reward(r), _name(r), str(r["date"])))
    return dict(sorted(suites.items()))


def _table(run: Mapping[str, Any]) -> str:
    """The table a run is ranked in: its suite's; an ``--env`` run (suite ``custom``) with the runs of the same
    envs only (runs that played different envs are not one ranking)."""
    suite = str(run["suite"])
    return f"{suite}: {', '.join(sorted(run['envs']))}" if suite == "custom" else suite


def _ranks(runs: list[dict[str, Any]]) -> list[str]:
    """Each row's rank: complete runs ranked 1, 2, ... with tied runs (the same mean success and mean reward to
    4 places) sharing one rank shown as ``=N``; incomplete runs ``–``."""
    keys = [(round(_mean_success(r), 4), round(_mean_reward(r), 4)) if is_complete(r) else None for r in runs]
    ranks = []
    for i, key in enumerate(keys):
        if key is None:
            ranks.append("–")
            continue
        first = keys.index(key) + 1
        tied = keys.count(key) > 1
        ranks.append(f"={first}" if tied else str(first))
    return ranks


def _vs_next(runs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Per row: whether its success differs significantly from the next ranked row's (``agentgym compare``'s
    paired sign-flip test over the tasks both scored, at 0.05), as (cell text, sort value); ``–`` for the last
    ranked row, an incomplete run, another suite version or records without per-task counts."""
    from agentgym.eval.compare import paired_test

    out = []
    for this, after in zip(runs, [*runs[1:], None]):
        if after is None or not (is_complete(this) and is_complete(after)) or \
                str(this.get("suite_version")) != str(after.get("suite_version")):
            out.append(("–", ""))
            continue
        diffs = []
        for env_id, env in sorted(this["envs"].items()):  # in a fixed order: the resampling is seeded
            other = after["envs"].get(env_id) or {}
            mine, theirs = env.get("per_task") or {}, other.get("per_task") or {}
            for task in sorted(set(mine) & set(theirs)):
                (c1, n1), (c2, n2) = mine[task], theirs[task]
                if n1 and n2:
                    diffs.append(c1 / n1 - c2 / n2)
        if not diffs:
            out.append(("–", ""))
            continue
        test = paired_test(diffs, resamples=4000)
        out.append((f"{'yes' if test['significant'] else 'no'} p={test['p_value']:.3f}", f"{test['p_value']:.4f}"))
    return out


def _suite_envs(runs: Iterable[Mapping[str, Any]]) -> list[str]:
    return sorted({env_id for run in runs for env_id in run["envs"]})


def _flag_names(run: Mapping[str, Any]) -> list[str]:
    flags = run["flags"]
    return [label for key, label in (("reproducible", "reproducible"), ("default_protocol", "default-protocol"))
            if flags.get(key)] + ([] if is_complete(run) else ["incomplete"])


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


# ---------------------------------------------------------------- README.md

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")  # not "#": html.escape writes &#x27;


def _md(text: str) -> str:
    """Plain text for a markdown table cell: no HTML, no markdown syntax, no line breaks, no cell breaks."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(" ".join(str(text).split())))


def _md_cell(env: Mapping[str, Any] | None) -> str:
    if env is None:
        return "–"
    low, high = env["success_ci"]
    return (f"{_pct(env['success_rate'])}% [{_pct(low)}–{_pct(high)}] · r={env['mean_reward']:.2f}" + _at_k(env)
            + _graded(env))


def _graded(env: Mapping[str, Any]) -> str:
    """`` · graded isolated`` / `` · graded in-process n/m`` where the verifier says how it made its verdicts."""
    counts = env.get("isolation") or {}
    total = sum(counts.values())
    if not total:
        return ""
    in_process = counts.get("in-process", 0)
    return " · graded isolated" if not in_process else f" · graded in-process {in_process}/{total}"


def _at_k(env: Mapping[str, Any]) -> str:
    """`` · pass@k=… mean@k=…`` for an env with several samples per task; empty otherwise."""
    k = int(env.get("samples") or 1)
    if k < 2:
        return ""
    return "".join(f" · {name}@{k}={_pct(env[field])}%"
                   for name, field in (("pass", "pass_at_k"), ("mean", "mean_at_k")) if env.get(field) is not None)


def _episodes_cell(run: Mapping[str, Any]) -> str:
    """The run's episodes, and its distinct tasks where they are fewer (several samples a task)."""
    episodes = sum(e["episodes"] for e in run["envs"].values())
    tasks = sum(e.get("tasks") or e["episodes"] for e in run["envs"].values())
    return str(episodes) if tasks >= episodes else f"{episodes} ({tasks} tasks)"


def _readme(suites: Mapping[str, list[dict[str, Any]]], probes: Mapping[str, Mapping[str, Any]]) -> str:
    n_runs = sum(len(runs) for runs in suites.values())
    lines = ["# agentgym leaderboard", "",
             f"Built by `agentgym leaderboard build` from {n_runs} run records in `runs/`; do not edit by hand.", "",
             ("- Each env cell: success rate % [95% CI over tasks: Wilson, or normal over each task's mean where "
              "a task has several samples] · mean reward, both over the scored episodes "
              "(errored ones are excluded and counted under *errors*); with several samples per task, "
              "pass@k (Chen et al. 2021) and mean@k."),
             ("- Rank: mean success over the suite's envs; `=N` marks a tie (same mean success and reward). "
              "Rows compare only within one env id (ids carry a version)."),
             "- *incomplete* runs (errored or unplayed episodes) are listed last and never ranked.",
             "- A local model's row names the precision its episodes computed in (fp32, bf16): from their records.",
             ("- Flags: *reproducible* = greedy decoding, a recorded git commit and one compute path (kernel, "
              "dtype, batch size) for every local-model episode; "
              "*default-protocol* = no env kwargs overridden and the default action format."),
             ("- *graded isolated*: every verdict was made out of the graded code's reach; *graded in-process n/m*: "
              "n of m were made inside the process the patch controls (SWE-bench's own log grading; "
              "docs/envs/swe.md)."),
             ("- *differs from next*: whether the row's success differs significantly (p < 0.05) from the next "
              "row's, by a paired sign-flip test over the tasks both played (`agentgym compare`); *no* means the "
              "two ranks are within the noise of these tasks."),
             ("- *Exploit rate*: the share of an env's tasks on which some policy that wants the reward without the "
              "work reached the success threshold (`agentgym probe`; docs/probe.md); 0 is what an env should show."),
             ""]
    for suite, runs in suites.items():
        envs = _suite_envs(runs)
        versions = sorted({str(r.get("suite_version")) for r in runs})
        lines += [f"## Suite {_md(suite)} (version {_md(', '.join(versions))})", "",
                  "| rank | model / policy | " + " | ".join(_md(e) for e in envs)
                  + " | mean success | episodes | errors | date | flags | differs from next |",
                  "|---:|---|" + "---|" * len(envs) + "---:|---:|---:|---|---|---|"]
        for rank, run, (vs_next, _) in zip(_ranks(runs), runs, _vs_next(runs)):
            cells = [rank, _md(_display_name(run)) + (f" ({_md(run['policy'])})" if run.get("model") else "")]
            cells += [_md_cell(run["envs"].get(e)) for e in envs]
            cells += [f"{_pct(_mean_success(run))}%", _episodes_cell(run),
                      str(_errors(run)), _md(str(run["date"])[:10]), ", ".join(_flag_names(run)) or "–", vs_next]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", _md(_probe_line(envs, probes)), ""]
    if not suites:
        lines += ["No runs yet: `agentgym eval ... --submit` writes one to `runs/`.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- index.html

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2rem auto;max-width:78rem;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #ddd;padding:.3rem .3rem;text-align:right;white-space:nowrap}
th{cursor:pointer;user-select:none;background:#f4f4f4;white-space:normal}
td.env .ci{display:block;white-space:normal}td.env .ci span{white-space:nowrap}td.flags{white-space:normal;max-width:9rem}.flag{display:inline-block;margin:.1rem}
th[aria-sort=descending]::after{content:" \\25BC"}th[aria-sort=ascending]::after{content:" \\25B2"}
td.name,th.name{text-align:left;white-space:normal;min-width:8rem;max-width:13rem;overflow-wrap:anywhere}
.ci{color:#777;font-size:85%}.flag{background:#e8f1fb;border-radius:3px;padding:0 .3rem;margin-left:.2rem}
.charts{display:flex;flex-wrap:wrap;gap:1rem}svg{background:#fff;border:1px solid #eee}
svg text{font:11px system-ui,sans-serif;fill:#333}
"""

# Sorts a table by the clicked column's data-value (numbers numerically); missing values stay last.
_JS = """
document.querySelectorAll("table.board").forEach(function (table) {
  var heads = table.querySelectorAll("thead th");
  heads.forEach(function (th, col) {
    th.addEventListener("click", function () {
      var descending = th.getAttribute("aria-sort") !== "descending";
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) { return row.cells[col].getAttribute("data-value"); }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === "" || y === "") { return (x === "") - (y === ""); }
        var nx = Number(x), ny = Number(y), c;
        c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
        return descending ? -c : c;
      });
      heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _html_table(suite: str, runs: list[dict[str, Any]], envs: list[str]) -> str:
    heads = ["rank", "model / policy"] + envs + ["mean success %", "episodes", "errors", "date", "flags"]
    out = [f'<table class="board" data-suite="{_e(suite)}"><thead><tr>']
    # env columns are headed by the id without the "agentgym/" prefix (the full id in the tooltip): the table
    # stays within a 1,280-px page with every core entry
    out += [f'<th scope="col"{" class=name" if h == "model / policy" else ""}'
            + (f' title="{_e(h)}">{_e(h.removeprefix("agentgym/")).replace("[", "<wbr>[")}</th>' if h in envs
               else f">{_e(h)}</th>")
            for h in heads]
    out.append("</tr></thead><tbody>")
    for rank, run, (vs_next, _) in zip(_ranks(runs), runs, _vs_next(runs)):
        name, flags = _name(run), _flag_names(run)
        episodes = sum(e["episodes"] for e in run["envs"].values())
        position = rank.lstrip("=") if rank != "–" else ""
        out.append(f'<tr data-rank="{position}" data-tied="{str(rank.startswith("=")).lower()}" '
                   f'data-complete="{str(is_complete(run)).lower()}" '
                   f'data-name="{_e(name)}" data-policy="{_e(run["policy"])}" '
                   f'data-mean-success="{_mean_success(run):.4f}" data-episodes="{episodes}" '
                   f'data-reproducible="{str("reproducible" in flags).lower()}" '
                   f'data-default-protocol="{str("default-protocol" in flags).lower()}">')
        verdict, _, p_value = vs_next.partition(" ")  # the mark beside the rank: ≠ (differs from the next), ~ (not)
        mark = {"yes": "≠", "no": "~"}.get(verdict)
        said = "differs from" if mark == "≠" else "does not differ from"
        marked = (f' <span class="ci" data-differs="{verdict}" title="{said} the next row: {_e(p_value)}">{mark}</span>'
                  if mark else "")
        out.append(f'<td data-value="{position}">{_e(rank)}{marked}</td>')
        policy = f' <span class="ci">{_e(run["policy"])}</span>' if run.get("model") else ""
        shown = _display_name(run)
        out.append(f'<td class="name" data-value="{_e(name.lower())}" data-precision="{_e(_precision(run))}">'
                   f'{_e(shown)}{policy}</td>')
        for env_id in envs:
            env = run["envs"].get(env_id)
            if env is None:
                out.append('<td data-value="">–</td>')
                continue
            low, high = env["success_ci"]
            out.append(f'<td class="env" data-value="{env["success_rate"]}" title="mean reward {env["mean_reward"]:.3f}">'
                       f'{_pct(env["success_rate"])} <span class="ci"><span>[{_pct(low)}–{_pct(high)}]</span> '
                       f'<span>r={env["mean_reward"]:.2f}</span>'
                       + (f' <span>{_e(_at_k(env).removeprefix(" · "))}</span>' if _at_k(env) else "")
                       + '</span></td>')
        out.append(f'<td data-value="{_mean_success(run):.4f}">{_pct(_mean_success(run))}</td>')
        out.append(f'<td data-value="{episodes}">{episodes}</td>')
        out.append(f'<td data-value="{_errors(run)}">{_errors(run)}</td>')
        out.append(f'<td data-value="{_e(run["date"])}">{_e(str(run["date"])[:10])}</td>')
        badges = "".join(f'<span class="flag">{_e(f)}</span>' for f in flags)
        out.append(f'<td class="flags" data-value="{len(flags)}">{badges}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


def _bar_chart(env_id: str, runs: list[dict[str, Any]]) -> str:
    """Horizontal bars of success rate per run on one env, with the 95% CI as a whisker."""
    rows = [(run, run["envs"][env_id]) for run in runs if env_id in run["envs"]]
    label_w, plot_w, row_h, top = 200, 320, 22, 28
    width, height = label_w + plot_w + 70, top + row_h * len(rows) + 24
    out = [(f'<svg class="bars" data-env="{_e(env_id)}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{width}" height="{height}" role="img" aria-label="success rate on {_e(env_id)}">'),
           f'<text x="4" y="16" font-weight="bold">{_e(env_id)}: success % (95% CI)</text>']
    for i, (run, env) in enumerate(rows):
        y, name = top + i * row_h, _name(run)
        short = name if len(name) <= 28 else name[:27] + "…"
        low, high = (label_w + plot_w * x for x in env["success_ci"])
        out.append(f'<g><title>{_e(name)}: {_pct(env["success_rate"])}% of {env["episodes"]}</title>'
                   f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{_e(short)}</text>'
                   f'<rect x="{label_w}" y="{y + 4}" width="{plot_w * env["success_rate"]:.1f}" height="{row_h - 8}" '
                   f'fill="{_PALETTE[i % len(_PALETTE)]}"/>'
                   f'<line x1="{low:.1f}" x2="{high:.1f}" y1="{y + 11}" y2="{y + 11}" stroke="#333"/>'
                   f'<text x="{label_w + plot_w + 6}" y="{y + 15}">{_pct(env["success_rate"])}</text></g>')
    axis_y = top + row_h * len(rows) + 4
    for tick in (0, 0.5, 1):
        x = label_w + plot_w * tick
        out.append(f'<line x1="{x}" x2="{x}" y1="{top}" y2="{axis_y}" stroke="#ccc"/>'
                   f'<text x="{x}" y="{axis_y + 14}" text-anchor="middle">{int(tick * 100)}</text>')
    out.append("</svg>")
    return "".join(out)


def _turn_rates(run: Mapping[str, Any]) -> list[tuple[int, int, int]]:
    """(turns, episodes that ended after that many turns, of them solved), over all the run's envs."""
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for env in run["envs"].values():
        for turns, correct in env.get("turns_correct", []):
            counts[int(turns)][0] += 1
            counts[int(turns)][1] += int(correct)
    return [(t, n, k) for t, (n, k) in sorted(counts.items())]


def _turns_plot(suite: str, runs: list[dict[str, Any]]) -> str:
    """Success rate of the episodes that ended after t turns, against t, one line per run."""
    series = [(run, _turn_rates(run)) for run in runs]
    turns = [t for _, points in series for t, _, _ in points] or [1]
    lo, hi = min(turns), max(turns)
    left, top, plot_w, plot_h, legend_w = 44, 28, 420, 220, 220
    width, height = left + plot_w + 20 + legend_w, top + plot_h + 40

    def xy(t: int, rate: float) -> tuple[float, float]:
        x = left + (plot_w * (t - lo) / (hi - lo) if hi > lo else plot_w / 2)
        return round(x, 1), round(top + plot_h * (1 - rate), 1)

    out = [(f'<svg class="turns" data-suite="{_e(suite)}" xmlns="http://www.w3.org/2000/svg" '
            f'width="{width}" height="{height}" role="img" aria-label="success rate by number of turns">'),
           f'<text x="4" y="16" font-weight="bold">success % by episode length (turns), suite {_e(suite)}</text>']
    for tick in (0, 0.5, 1):
        _, y = xy(lo, tick)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y}" y2="{y}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{int(tick * 100)}</text>')
    for t in sorted(set(turns)) if len(set(turns)) <= 20 else (lo, hi):
        x, _ = xy(t, 0)
        out.append(f'<text x="{x}" y="{top + plot_h + 16}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{left + plot_w / 2}" y="{top + plot_h + 32}" text-anchor="middle">turns</text>')
    for i, (run, points) in enumerate(series):
        color, name = _PALETTE[i % len(_PALETTE)], _name(run)
        coords = [xy(t, k / n) for t, n, k in points]
        out.append(f'<g class="series" data-name="{_e(name)}">'
                   f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                   f'points="{" ".join(f"{x},{y}" for x, y in coords)}"/>')
        out += [f'<circle cx="{x}" cy="{y}" r="{2 + min(4, math.sqrt(n))}" fill="{color}">'
                f'<title>{_e(name)}: {k}/{n} solved in {t} turns</title></circle>'
                for (x, y), (t, n, k) in zip(coords, points)]
        short = name if len(name) <= 30 else name[:29] + "…"
        ly = top + 8 + 16 * i
        out.append(f'<rect x="{left + plot_w + 20}" y="{ly - 8}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{left + plot_w + 36}" y="{ly + 1}">{_e(short)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _index_html(suites: Mapping[str, list[dict[str, Any]]], probes: Mapping[str, Mapping[str, Any]]) -> str:
    # The CSP pins the one inline script by hash and allows no fetches at all: the page works
    # offline by construction, and markup that slipped past escaping still could not run.
    script_hash = base64.b64encode(hashlib.sha256(_JS.encode()).digest()).decode()
    csp = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
             '<meta name="viewport" content="width=device-width,initial-scale=1">',
             f"<title>agentgym leaderboard</title><style>{_CSS}</style></head><body>",
             "<h1>agentgym leaderboard</h1>",
             ("<p>Success rate % with its 95% Wilson interval and mean reward r, per env; ranked by mean success "
              "over the suite's envs (errored episodes excluded and counted under errors; =N marks a tie); "
              "<em>incomplete</em> runs are listed last, unranked. Click a column header to sort. "
              "<em>reproducible</em>: greedy decoding and a "
              "recorded git commit; <em>default-protocol</em>: no env kwargs overridden, default action format. "
              "≠ beside a rank: the row's success differs significantly (p &lt; 0.05, in its tooltip) from the next "
              "row's, by a paired sign-flip test over the tasks both played; ~: it does not.</p>")]
    for suite, runs in suites.items():
        envs = _suite_envs(runs)
        versions = ", ".join(sorted({str(r.get("suite_version")) for r in runs}))
        parts += [f'<section data-suite="{_e(suite)}"><h2>Suite {_e(suite)} <small>version {_e(versions)}</small></h2>',
                  _html_table(suite, runs, envs), f'<p class="probes">{_e(_probe_line(envs, probes))}</p>',
                  '<div class="charts">']
        parts += [_bar_chart(env_id, runs) for env_id in envs]
        parts += [_turns_plot(suite, runs), "</div></section>"]
    if not suites:
        parts.append("<p>No runs yet.</p>")
    parts.append(f"<script>{_JS}</script></body></html>\n")
    return "\n".join(parts)


def build_leaderboard(leaderboard_dir: str | Path) -> tuple[Path, Path]:
    """Read every ``runs/**/*.json`` under ``leaderboard_dir`` (and the probe reports of ``probes/*.json``); write
    and return its README.md and index.html."""
    leaderboard_dir = Path(leaderboard_dir)
    suites = _ranked_suites(leaderboard_dir)
    probes = probe_reports(leaderboard_dir)
    readme, index = leaderboard_dir / "README.md", leaderboard_dir / "index.html"
    leaderboard_dir.mkdir(parents=True, exist_ok=True)
    readme.write_text(_readme(suites, probes), encoding="utf-8")
    index.write_text(_index_html(suites, probes), encoding="utf-8")
    return readme, index


# ---------------------------------------------------------------- exploit rates (agentgym probe)

BUNDLED_PROBES = Path(__file__).resolve().parents[1] / "data" / "probes" / "bundled.json"


def probe_reports(leaderboard_dir: Path) -> dict[str, dict[str, Any]]:
    """Each env's newest probe report of the current battery: ``probes/*.json`` under ``leaderboard_dir``
    (``agentgym probe --submit``), else the bundled envs' own (``agentgym/data/probes/bundled.json``, made by
    ``scripts/probe_bundled.py``). Reports of another battery version are left out: rates compare only within one."""
    from agentgym.probe import BATTERY_VERSION

    found: dict[str, dict[str, Any]] = {}
    bundled = json.loads(BUNDLED_PROBES.read_text(encoding="utf-8")) if BUNDLED_PROBES.is_file() else {}
    submitted = []
    for path in sorted((leaderboard_dir / "probes").glob("*.json")):
        try:
            submitted.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a probe report ({exc}); write one with agentgym probe --submit.") from exc
    for report in [*bundled.get("envs", []), *submitted]:
        if not isinstance(report, dict) or not isinstance(report.get("env"), str):
            continue
        if str(report.get("battery_version")) == BATTERY_VERSION:
            found[report["env"]] = report
    return found


def _probe_line(envs: Iterable[str], probes: Mapping[str, Mapping[str, Any]]) -> str:
    from agentgym.probe import BATTERY_VERSION

    cells = []
    for env_id in envs:
        report = probes.get(env_id)
        cells.append(f"{env_id} not probed" if report is None else
                     f"{env_id} {float(report['exploit_rate']):.2f} ({int(report.get('tasks') or 0)} tasks, "
                     f"{str(report.get('date') or '')[:10] or 'undated'})")
    return f"Exploit rate (agentgym probe, battery v{BATTERY_VERSION}): " + "; ".join(cells)
