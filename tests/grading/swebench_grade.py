"""SWE-bench's own grading of eval logs, for tests/grading.rs.

Reads a JSON list of cases on stdin, each {"log": path, "parser": name,
"repo": owner/name, "f2p": [...], "p2p": [...]}, and prints, per case, what
SWE-bench 5.0.2 makes of it: `get_logs_eval`'s status map and whether it
found one, and `get_eval_report`'s report with every id's grade.

`swebench.harness`'s package module imports its docker and modal back ends,
which grading does not use; the package is set up here without it, so only
its own grading, parser and constant modules are loaded, unchanged.
"""

import json
import os
import sys
import types

import swebench

harness = types.ModuleType("swebench.harness")
harness.__path__ = [os.path.join(os.path.dirname(swebench.__file__), "harness")]
sys.modules["swebench.harness"] = harness

from swebench.harness.grading import get_eval_report, get_logs_eval  # noqa: E402
from swebench.types import TestSpec  # noqa: E402

assert swebench.__version__ == "5.0.2", swebench.__version__

out = []
for case in json.load(sys.stdin):
    spec = TestSpec(
        instance_id="instance",
        image="",
        eval_script_list=[],
        repo=case["repo"],
        version="",
        FAIL_TO_PASS=case["f2p"],
        PASS_TO_PASS=case["p2p"],
        log_parser=case["parser"],
        eval_type="pass_and_fail",
    )
    status_map, found = get_logs_eval(spec, case["log"])
    prediction = {"instance_id": "instance", "model_name_or_path": "m", "model_patch": "x"}
    report = get_eval_report(spec, prediction, case["log"], True)["instance"]
    out.append({"status_map": list(status_map.items()), "found": found, "report": report})
json.dump(out, sys.stdout)
