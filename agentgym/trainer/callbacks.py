"""The trainer's logging callback: one ``metrics.jsonl`` row and one console line per step (saying so when the step
had no learning signal), TRL's raw metrics in the log file, sampled episodes, the echo-trap warning, and the warning
that observation masking is off."""

from __future__ import annotations

import json
import logging
import math
import time
import warnings
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from agentgym.trainer.config import TrainConfig
from agentgym.trainer.stats import RolloutStats

__all__ = ["MetricsLog"]

logger = logging.getLogger("agentgym.trainer")


class MetricsLog(TrainerCallback):
    """One JSONL row per step (TRL's metrics + the rollouts'), a console line, the echo-trap warning, and the
    masking-off warning at the start of training."""

    def __init__(self, config: TrainConfig, stats: RolloutStats, console: Any) -> None:
        self.config = config
        self.stats = stats
        self.console = console
        self.path = Path(config.output_dir) / "metrics.jsonl"
        self.step_start = time.perf_counter()
        self.history: list[tuple[float, float, float]] = []
        self.warned = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not self.config.mask_observations:
            self._warn_unmasked()

    def _warn_unmasked(self) -> None:
        """Warn (``warnings``, the log, the console) and record it in ``metrics.jsonl``, once per run directory."""
        message = ("mask_observations is off: observation tokens (tool outputs, env text and the chat glue around "
                   "them) are trained on as if the model had written them. This setting exists only for the masking "
                   "ablation; a real run keeps observations masked.")
        warnings.warn(message, UserWarning, stacklevel=2)
        logger.warning(message)
        if self.console is not None:
            self.console.print(f"WARNING: {message}", highlight=False)
        if self.path.is_file() and '"warning": "observation_masking_off"' in self.path.read_text(encoding="utf-8"):
            return  # a resumed run: recorded when it started
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"step": 0, "warning": "observation_masking_off", "message": message}) + "\n")

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.step_start = time.perf_counter()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        logs = dict(logs or {})
        if "loss" not in logs and "reward" not in logs:
            return  # the end-of-training summary
        rollout = self.stats.summary()
        no_signal = self._no_signal()
        self._write_samples(state.global_step)
        self.stats.clear()
        logger.info("step %d TRL metrics: %s", state.global_step, json.dumps(logs))
        row = {"step": state.global_step, "reward_mean": logs.get("reward"), "reward_std": logs.get("reward_std"),
               "entropy": logs.get("entropy"), "kl": logs.get("kl"),
               "clip_ratio": logs.get("clip_ratio/region_mean"), "loss": logs.get("loss"),
               "learning_rate": logs.get("learning_rate"), "grad_norm": logs.get("grad_norm"),
               "step_time_s": time.perf_counter() - self.step_start, "no_signal": no_signal, **rollout,
               "trl": {k: v for k, v in logs.items() if isinstance(v, (int, float))}}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        self._collapse_check(row)
        if self.console is not None:
            self.console.print(self._line(row), highlight=False)

    def _line(self, row: dict[str, Any]) -> str:
        errors = int(row.get("rollout_errors") or 0)
        return (f"step {row['step']:>4}/{self.config.steps}  reward {_fmt(row['reward_mean'])} "
                f"± {_fmt(row['reward_std'])}  success {_fmt(row.get('success'))}  entropy {_fmt(row['entropy'])}"
                f"  turns {_fmt(row.get('turns'))}  tool calls {_fmt(row.get('tool_call_rate'))}"
                f"  tokens {int(row.get('tokens_model', 0))}/{int(row.get('tokens_masked', 0))} obs"
                f"  masked {_fmt(row.get('masked_share'))}  {row['step_time_s']:.1f} s"
                + (f"  {errors} failed episodes (reward 0, left out of the baseline)" if errors else "")
                + (f"  {int(row['resampled_groups'])} groups resampled" if row.get("resampled_groups") else "")
                + (f"  staleness {row['staleness_mean']:.2f} (max {int(row['staleness_max'])}), "
                   f"{int(row['groups_queued'])} queued, {int(row['groups_in_flight'])} in flight, "
                   f"{int(row['dropped_stale'])} dropped stale, learner idle {row['learner_idle_s']:.1f} s"
                   + (f", {int(row['rollouts_lost'])} rollouts lost with {int(row['rollout_workers_lost'])} "
                      "worker(s), played again" if row.get("rollout_workers_lost") else "")
                   if "staleness_mean" in row else "")
                + ("  no learning signal: every group's rewards were equal, so every advantage (and the policy "
                   "gradient) is 0" if row.get("no_signal") else ""))

    def _no_signal(self) -> bool | None:
        """Whether no GRPO group of the step's episodes had two different rewards (None: no episodes seen).

        The episodes come in TRL's order, ``group_size`` consecutive rollouts of one task per group; a failed
        episode (reward None) is out of its group's baseline, so it cannot make a difference either."""
        episodes, size = self.stats.episodes, self.config.group_size
        if not episodes:
            return None
        groups = [episodes[i:i + size] for i in range(0, len(episodes), size)]
        return all(len({e.reward for e in group if not e.failed}) < 2 for group in groups)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        logger.info("step %d: checkpoint saved to %s", state.global_step,
                    Path(args.output_dir) / f"checkpoint-{state.global_step}")

    def _write_samples(self, step: int) -> None:
        """``samples.jsonl``: the step's first ``log_samples`` episodes, their turns as the env read them."""
        keep = self.stats.episodes[: self.config.log_samples]
        if not keep:
            return
        with (Path(self.config.output_dir) / "samples.jsonl").open("a", encoding="utf-8") as f:
            for e in keep:
                sample = {"step": step, "task": e.task_id, "reward": e.reward, "success": e.success,
                          "turns": e.model_texts}
                f.write(json.dumps({**sample, "error": e.error} if e.failed else sample) + "\n")

    def _collapse_check(self, row: dict[str, Any]) -> None:
        std, entropy = row.get("reward_std"), row.get("entropy")
        if std is None or entropy is None:
            return
        self.history.append((float(std), float(entropy), float(row.get("reward_mean") or 0.0)))
        window = self.config.collapse_window
        if self.warned or len(self.history) < window + 1:
            return
        first_entropy = self.history[0][1]
        recent = self.history[-window:]
        # every rollout solving its task also leaves no variance: that is success, not the trap
        solved = all(mean >= 1.0 - 1e-6 for _, _, mean in recent)
        collapsed = all(s < 1e-6 and e < 0.5 * first_entropy for s, e, _ in recent)
        if collapsed and not solved:
            self.warned = True
            message = (f"Reward variance and entropy have collapsed together for {window} steps (entropy "
                       f"{recent[-1][1]:.3f}, started at {first_entropy:.3f}; reward std 0): RAGEN's 'echo trap'. "
                       "The policy repeats itself and GRPO gets no signal; lower the learning rate, raise the "
                       "temperature, or stop here.")
            warnings.warn(message, RuntimeWarning, stacklevel=2)
            logger.warning(message)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"step": row["step"], "warning": "echo_trap", "message": message}) + "\n")


def _fmt(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"
