"""A SWE-bench 5.x dataset row and a swebench-style instance image for it, built offline by tests.

The image has the layout of swebench's instance images (``swebench/sweb.eval.x86_64.<id>``):
the repository at ``/testbed`` at ``base_commit``, owned by root, installed into an env
named ``testbed`` that ``source /opt/miniconda3/bin/activate && conda activate testbed``
activates. No conda can be installed offline, so that env is a venv and
``/opt/miniconda3/bin/activate`` a few lines that give ``conda activate`` its meaning;
the eval script is in the shape swebench writes for pytest repositories. Its stop signal is
SIGKILL: swebench's harness runs ``tail -f /dev/null`` as the container's pid 1, which
ignores SIGTERM, so its ``docker stop --time=15`` would wait out the 15 s on every run.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from helpers.tiny_instance import FILES, write_instance

from agentgym.envs.swe.grader import test_files
from agentgym.envs.swe.repo import materialize

BASE = os.environ.get("AGENTGYM_DOCKER_BASE", "agentgym-base:bookworm")
ACTIVATE = """# conda's activate script, as far as SWE-bench's eval scripts use it: `conda activate NAME`
conda() {
    if [ "$1" = activate ]; then . "/opt/miniconda3/envs/$2/bin/activate"; fi
}
"""
DOCKERFILE = f"""FROM {BASE}
COPY testbed /testbed
COPY activate /opt/miniconda3/bin/activate
RUN python3 -m venv --system-site-packages --without-pip /opt/miniconda3/envs/testbed \\
 && /opt/miniconda3/envs/testbed/bin/python -c \\
    "import site; open(site.getsitepackages()[0] + '/testbed.pth', 'w').write('/testbed\\\\n')" \\
 && printf '#!/opt/miniconda3/envs/testbed/bin/python\\nimport sys, pytest\\nsys.exit(pytest.console_main())\\n' \\
    > /opt/miniconda3/envs/testbed/bin/pytest && chmod 755 /opt/miniconda3/envs/testbed/bin/pytest
WORKDIR /testbed
STOPSIGNAL SIGKILL
"""


def official_eval_script(instance: dict) -> str:
    """The eval script swebench writes for a pytest repository at ``/testbed``."""
    base, files = instance["base_commit"], " ".join(test_files(instance["test_patch"]))
    return "\n".join([
        "#!/bin/bash", "set -uxo pipefail", "source /opt/miniconda3/bin/activate", "conda activate testbed",
        "cd /testbed", "git config --global --add safe.directory /testbed", "cd /testbed", "git status", "git show",
        f"git -c core.fileMode=false diff {base}", "source /opt/miniconda3/bin/activate", "conda activate testbed",
        f"git checkout {base} {files}", "git apply -v - <<'EOF_114329324912'", instance["test_patch"].rstrip("\n"),
        "EOF_114329324912", ": '>>>>> Start Test Output'", f"pytest -rA {files}", ": '>>>>> End Test Output'",
        f"git checkout {base} {files}",
    ]) + "\n"


def write_official_row(directory: Path, image: str) -> dict:
    """``directory/test.jsonl``: the tiny instance as a SWE-bench 5.x row (no bundled repository)."""
    with tempfile.TemporaryDirectory() as tmp:
        instance = write_instance(Path(tmp))
    instance.update(image=image, eval_script=official_eval_script(instance), log_parser="parse_log_pytest",
                    eval_type="pass_and_fail")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "test.jsonl").write_text(json.dumps(instance) + "\n")
    return instance


def build_image(tag: str) -> str:
    """Build the instance image for the tiny instance with ``docker build --network none``; its tag."""
    with tempfile.TemporaryDirectory() as tmp:
        context = Path(tmp)
        materialize(FILES, context / "testbed", "calc 1.0")
        (context / "activate").write_text(ACTIVATE)
        (context / "Dockerfile").write_text(DOCKERFILE)
        proc = subprocess.run(["docker", "build", "-q", "--network", "none", "-t", tag, str(context)],
                              capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"docker build failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return tag
