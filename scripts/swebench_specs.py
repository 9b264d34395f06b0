#!/usr/bin/env python3
"""Dump SWE-bench's per-(repository, version) Python environment specs to JSON.

This writes `data/swebench-specs.json`: what SWE-bench's own harness uses to build
the environment, install the repository and run the tests of every Python task
instance (`MAP_REPO_VERSION_TO_SPECS_PY`), the files it reads for
`packages: requirements.txt` / `environment.yml`, and which log parser each
repository uses, so that a reader without Docker can do the same.

Which release: SWE-bench 5.x no longer ships the specs (its dataset carries a
ready eval script, image and log-parser name per instance instead), so the
specs come from the newest 4.x release, 4.1.0. The script refuses a release
without `MAP_REPO_VERSION_TO_SPECS_PY`.

Rerun (stdlib only; swebench's dependencies are not needed, since nothing
that imports them is executed: the constants modules are loaded on their own,
everything else is read with `ast`):

    python3 -m venv /tmp/v
    /tmp/v/bin/pip install --no-deps swebench==4.1.0
    /tmp/v/bin/python scripts/swebench_specs.py --output data/swebench-specs.json

or, without installing, from an unpacked wheel:

    pip download --no-deps swebench==4.1.0 -d /tmp/w && cd /tmp/w && unzip -q swebench-4.1.0-*.whl
    python3 scripts/swebench_specs.py --swebench-root /tmp/w/swebench --output data/swebench-specs.json

Without --output the JSON goes to stdout. The output is deterministic
(`json.dumps(indent=1, sort_keys=True)`, lists kept in SWE-bench's order).

Output shape:

    {
     "generated_by": "scripts/swebench_specs.py",
     "swebench_version": "4.1.0",
     "harness": {...constants the scripts are built from, see `harness_constants`...},
     "repos": {
      "owner/name": {
       "log_parser": "parse_log_astropy",          # name in MAP_REPO_TO_PARSER_PY (a PARSER_REGISTRY key in 5.x), or null
       "log_parser_function": "parse_log_pytest_v2",  # the function that name is bound to
       "requirements_paths": [...] or null,       # MAP_REPO_TO_REQS_PATHS[repo]: tried in order, first found wins
       "environment_yml_paths": [...] or null,    # MAP_REPO_TO_ENV_YML_PATHS[repo]: same
       "repo_install": str or null,               # MAP_REPO_TO_INSTALL[repo], run before pre_install
       "base_commit_branch": {commit: branch} or null,  # REPO_BASE_COMMIT_BRANCH[repo]: `git clone --branch`
       "versions": {"<version>": {<the spec dict exactly as SWE-bench has it>}}
      }
     }
    }
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import sys
import types
from importlib import metadata
from pathlib import Path

GENERATED_BY = "scripts/swebench_specs.py"


def locate_swebench(root: str | None) -> Path:
    """The directory of the `swebench` package, without executing its __init__."""
    if root:
        path = Path(root).resolve()
        if path.name != "swebench" and (path / "swebench").is_dir():
            path = path / "swebench"
        if not (path / "__init__.py").is_file():
            sys.exit(f"{path} is not the swebench package directory")
        return path
    spec = importlib.util.find_spec("swebench")
    if spec is None or not spec.submodule_search_locations:
        sys.exit(
            "swebench is not importable; install it "
            "(pip install --no-deps swebench==4.1.0) or pass --swebench-root"
        )
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def swebench_version(pkg: Path, from_root: bool) -> str:
    """`__version__` as the package's own __init__ spells it, cross-checked
    against the installed distribution's metadata when it is installed."""
    version = None
    for node in ast.parse((pkg / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            version = ast.literal_eval(node.value)
    if version is None:
        sys.exit(f"no __version__ in {pkg / '__init__.py'}")
    if not from_root:
        try:
            installed = metadata.version("swebench")
        except metadata.PackageNotFoundError:
            installed = None
        if installed is not None and installed != version:
            sys.exit(f"swebench metadata says {installed}, its __init__ says {version}")
    return version


def load_constants(pkg: Path) -> types.ModuleType:
    """Import swebench.harness.constants without running swebench/__init__.py
    (which in 4.x eagerly imports docker, datasets, modal, ...). The constants
    package itself imports only its sibling modules and the stdlib."""
    for name, path in (("swebench", pkg), ("swebench.harness", pkg / "harness")):
        stub = types.ModuleType(name)
        stub.__path__ = [str(path)]
        stub.__file__ = str(path / "__init__.py")
        sys.modules[name] = stub
    return importlib.import_module("swebench.harness.constants")


def module_ast(path: Path) -> ast.Module:
    if not path.is_file():
        sys.exit(f"{path} does not exist (is this a 4.x swebench?)")
    return ast.parse(path.read_text(), filename=str(path))


def module_assignments(tree: ast.Module) -> dict[str, ast.expr]:
    """Top-level `NAME = value` assignments (the last one wins, as at run time)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.value is not None:
                out[node.target.id] = node.value
    return out


def python_parsers(pkg: Path) -> dict[str, dict[str, str]]:
    """MAP_REPO_TO_PARSER_PY read from source: the name each repo's entry uses
    and the function that name is bound to (`parse_log_astropy =
    parse_log_pytest_v2`). Read, not imported, because the module imports the
    harness (and with it requests, unidiff, datasets, ...)."""
    path = pkg / "harness" / "log_parsers" / "python.py"
    tree = module_ast(path)
    assigns = module_assignments(tree)
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    mapping = assigns.get("MAP_REPO_TO_PARSER_PY")
    if not isinstance(mapping, ast.Dict):
        sys.exit(f"no MAP_REPO_TO_PARSER_PY dict literal in {path}")

    def resolve(name: str) -> str:
        seen = set()
        while name not in functions:
            value = assigns.get(name)
            if not isinstance(value, ast.Name) or name in seen:
                sys.exit(f"cannot resolve log parser {name} in {path}")
            seen.add(name)
            name = value.id
        return name

    out = {}
    for key, value in zip(mapping.keys, mapping.values):
        if not isinstance(key, ast.Constant) or not isinstance(value, ast.Name):
            sys.exit(f"unexpected MAP_REPO_TO_PARSER_PY entry in {path}")
        out[key.value] = {"name": value.id, "function": resolve(value.id)}
    return out


def literal_assignment(path: Path, name: str):
    value = module_assignments(module_ast(path)).get(name)
    if value is None:
        sys.exit(f"no top-level {name} in {path}")
    return ast.literal_eval(value)


def requirements_exclude_prefixes(path: Path) -> list[str]:
    """The prefixes in get_requirements_by_commit's
    `exclude_line = lambda line: any([line.strip().startswith(x) for x in [...]])`."""
    for node in ast.walk(module_ast(path)):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "exclude_line" for t in node.targets)
            and isinstance(node.value, ast.Lambda)
        ):
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.List) and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in sub.elts
                ):
                    return [e.value for e in sub.elts]
    sys.exit(f"no exclude_line lambda with a list of prefixes in {path}")


def check_json_value(value, where: str):
    """Refuse anything json.dumps would change or reject (tuples, sets, floats
    that are really ints...), so the file holds the values exactly."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            check_json_value(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                sys.exit(f"{where}: non-string key {key!r}")
            check_json_value(item, f"{where}.{key}")
        return
    sys.exit(f"{where}: {type(value).__name__} {value!r} has no exact JSON form")


def harness_constants(pkg: Path, constants: types.ModuleType) -> dict:
    test_spec_py = pkg / "harness" / "test_spec" / "python.py"
    return {
        # run_evaluation.py: tried in order on the model patch (/tmp/patch.diff) in
        # /testbed, before eval.sh runs; the first that exits 0 wins.
        "git_apply_cmds": literal_assignment(
            pkg / "harness" / "run_evaluation.py", "GIT_APPLY_CMDS"
        ),
        # get_test_directives drops test-patch files ending in any of these.
        "non_test_exts": list(constants.NON_TEST_EXTS),
        "start_test_output": constants.START_TEST_OUTPUT,
        "end_test_output": constants.END_TEST_OUTPUT,
        # get_requirements_by_commit / clean_requirements / clean_environment_yml
        "requirements_exclude_line_prefixes": requirements_exclude_prefixes(test_spec_py),
        "replace_req_packages": [
            list(pair) for pair in literal_assignment(test_spec_py, "REPLACE_REQ_PACKAGES")
        ],
        "raw_url_base": constants.SWE_BENCH_URL_RAW,
    }


def build(pkg: Path, version: str) -> dict:
    constants = load_constants(pkg)
    specs_py = getattr(constants, "MAP_REPO_VERSION_TO_SPECS_PY", None)
    if specs_py is None:
        sys.exit(
            f"swebench {version} has no MAP_REPO_VERSION_TO_SPECS_PY (5.x moved the "
            "specs into its datasets); use swebench==4.1.0"
        )
    reqs_paths = constants.MAP_REPO_TO_REQS_PATHS
    env_yml_paths = constants.MAP_REPO_TO_ENV_YML_PATHS
    repo_install = constants.MAP_REPO_TO_INSTALL
    branches = getattr(constants, "REPO_BASE_COMMIT_BRANCH", {})
    parsers = python_parsers(pkg)

    repos = {}
    for repo, versions in specs_py.items():
        parser = parsers.get(repo)
        entry = {
            "log_parser": parser["name"] if parser else None,
            "log_parser_function": parser["function"] if parser else None,
            "requirements_paths": reqs_paths.get(repo),
            "environment_yml_paths": env_yml_paths.get(repo),
            "repo_install": repo_install.get(repo),
            "base_commit_branch": branches.get(repo),
            "versions": {str(v): spec for v, spec in versions.items()},
        }
        check_json_value(entry, repo)
        repos[repo] = entry
    missing = sorted(set(parsers) - set(repos))
    if missing:
        sys.exit(f"parsers for repos without specs: {missing}")

    harness = harness_constants(pkg, constants)
    check_json_value(harness, "harness")
    return {
        "swebench_version": version,
        "generated_by": GENERATED_BY,
        "harness": harness,
        "repos": repos,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", "-o", help="write here instead of stdout")
    parser.add_argument(
        "--swebench-root",
        help="the swebench package directory of an unpacked wheel (default: the importable one)",
    )
    args = parser.parse_args()
    pkg = locate_swebench(args.swebench_root)
    data = build(pkg, swebench_version(pkg, bool(args.swebench_root)))
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
