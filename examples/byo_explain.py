# Open-ended answers scored by a rubric: an exact part (the answer names the gold), a judged part (a model reads
# the explanation against the passage), and a gate (it cites a passage). docs/verifiers.md, "Rubrics and judges".
# The judge is any OpenAI-compatible endpoint: by default agentgym's own gateway (`agentgym gateway`, port 8300).
#   agentgym gateway &
#   agentgym eval --import examples/byo_explain.py --env byo/ExplainHandbook-v0 --policy oracle
import os
import re

import agentgym

DOCS = [
    "Badge renewals are handled by the security office on floor 3, because the badge printer is there.",
    "The Atlas test rig is in building C, the only building with a floor rated for its weight.",
    "Kestrel ships its telemetry to the Oslo data centre, which is closest to the project's ground stations.",
]
TASKS = [
    {"question": "Which floor handles badge renewals, and why?", "answer": "3", "passage": 0, "split": "test",
     "explanation": "Floor 3 [0]: the badge printer is there."},
    {"question": "Where is the Atlas test rig, and why there?", "answer": "C", "passage": 1, "split": "test",
     "explanation": "Building C [1]: the only floor rated for its weight."},
    {"question": "Where does Kestrel send its telemetry, and why?", "answer": "Oslo", "passage": 2, "split": "test",
     "explanation": "Oslo [2]: it is closest to the ground stations."},
]
for task in TASKS:
    task["reference"] = DOCS[task["passage"]]


def read_passage(number: int) -> str:
    """Read a handbook passage.

    Args:
        number: The passage's number, 0 to 2.
    """
    return DOCS[number] if 0 <= number < len(DOCS) else "No such passage."


def cites_a_passage(answer, task):
    return re.search(r"\[\d\]", answer or "") is not None


def names(answer, word):
    return re.search(rf"\b{re.escape(word)}\b", answer or "", re.IGNORECASE) is not None


def names_the_answer(answer, task):  # the gold, and no other task's answer (listing them all scores 0)
    return names(answer, task["answer"]) and not any(names(answer, t["answer"]) for t in TASKS
                                                     if t["answer"] != task["answer"])


JUDGE = agentgym.JudgeRubric(
    criteria="The answer says why, and the reason is the one the reference passage gives.",
    model=os.environ.get("AGENTGYM_JUDGE_MODEL", "smollm2"),
    base_url=os.environ.get("AGENTGYM_JUDGE_URL", "http://127.0.0.1:8300/v1"),
    task_key="question", reference_key="reference",
    cache=os.environ.get("AGENTGYM_JUDGE_CACHE", "~/.cache/agentgym/judge"))
RUBRIC = agentgym.Rubric(agentgym.Part("cites", cites_a_passage, gate=True),
                         agentgym.Part("correct", names_the_answer, weight=2),
                         agentgym.Part("explains", JUDGE))
agentgym.register("byo/ExplainHandbook-v0", agentgym.ToolEnv, tasks=TASKS, tools=[read_passage], verifier=RUBRIC,
                  columns={"answer": "explanation"}, prompt_template="Answer from the handbook, citing the "
                  "passage as [n], and say why. {question}")
