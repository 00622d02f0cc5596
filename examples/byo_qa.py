# Question answering over your own documents: a keyword search (rare words weigh more), the "qa" verifier.
# docs/custom-envs.md walks through it.
#   agentgym eval --import examples/byo_qa.py --env byo/HandbookQA-v0 --policy oracle
import re
from collections import Counter

import agentgym

DOCS = [
    "Badge renewals are handled by the security office on floor 3, Mondays to Thursdays.",
    "The Atlas test rig is in building C; book it through the lab calendar.",
    "Expense reports above 500 euros need a director's approval before payment.",
    "The Kestrel project ships its telemetry to the Oslo data centre.",
    "The cafeteria serves lentil soup every Tuesday.",
]
TASKS = [
    {"question": "Which floor is the security office on?", "answer": "3", "split": "test"},
    {"question": "In which building is the Atlas test rig?", "answer": "C", "split": "test"},
    {"question": "Where does Kestrel send its telemetry?", "answer": "Oslo", "split": "test"},
    {"question": "What soup does the cafeteria serve on Tuesday?", "answer": "lentil", "split": "train"},
    {"question": "Above how many euros does an expense need approval?", "answer": "500", "split": "train"},
]
INDEX = [Counter(re.findall(r"\w+", doc.lower())) for doc in DOCS]
DOC_FREQ = Counter(word for counts in INDEX for word in counts)


def search_handbook(query: str) -> str:
    """Search the company handbook; returns the two best-matching passages.

    Args:
        query: Keywords to look for.
    """
    words = set(re.findall(r"\w+", query.lower()))
    scores = [sum(1 / DOC_FREQ[w] for w in words if w in counts) for counts in INDEX]
    best = sorted(range(len(DOCS)), key=lambda i: -scores[i])[:2]
    return "\n".join(f"[{i}] {DOCS[i]}" for i in best if scores[i] > 0) or "No match; try other keywords."


agentgym.register("byo/HandbookQA-v0", agentgym.ToolEnv, tasks=TASKS, tools=[search_handbook], verifier="qa",
                  prompt_template="Answer from the company handbook. {question}")
