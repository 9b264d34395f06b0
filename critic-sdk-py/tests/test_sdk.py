"""The Python SDK on its own: the wire form, the diff reader, the helpers,
the host calls of a native test, and how failures reach the host."""

import json

import pytest

import critic_sdk
from critic_sdk import (DetectorFailed, DiffError, Event, EventKind, FileStatus, Finish, HostError,
                        LineKind, LlmRequest, LlmResult, ChatMessage, RunRequest, RunResult,
                        Verdict, commands, host, is_file_edit, last_file_edit, run_detector)
from critic_sdk.detector import MAX_REASON
from critic_sdk.diff import parse
from critic_sdk.testing import TestInput

DIFF = (
    "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n"
    "@@ -1,3 +1,3 @@ def f():\n x = 1\n-y = 2\n+y = 3\n z = 4\n"
    "diff --git a/tests/test_m.py b/tests/test_m.py\nnew file mode 100644\n"
    "--- /dev/null\n+++ b/tests/test_m.py\n@@ -0,0 +1,2 @@\n+def test():\n+    pass\n"
)


def test_the_input_round_trips_the_wire():
    seen = {}

    def detect(finish: Finish) -> Verdict:
        seen["finish"] = finish
        return Verdict.accept(metadata={"n": len(finish.events)}, state={"k": 1})

    out = (TestInput().config({"a": 1}).state({"b": 2}).iteration(3).diff(DIFF)
           .message("user", "fix it").command("pytest", 1, "1 failed").finish("done").run(detect))
    finish = seen["finish"]
    assert (finish.config, finish.state, finish.iteration) == ({"a": 1}, {"b": 2}, 3)
    assert [e.kind for e in finish.events] == [EventKind.MESSAGE, EventKind.ACTION,
                                               EventKind.OBSERVATION, EventKind.FINISH]
    assert finish.events[1].command == "pytest" and finish.events[2].exit_code == 1
    assert [f.path for f in finish.patch.test_files()] == ["tests/test_m.py"]
    assert [f.path for f in finish.patch.source_files()] == ["src/m.py"]
    assert (out.triggered, out.metadata, out.state) == (False, {"n": 4}, {"k": 1})


def test_the_events_come_from_the_host_and_only_the_tail_when_asked():
    calls = []

    class Counting(host.NativeHost):
        def events_range(self, start, end):
            calls.append((start, end))
            return super().events_range(start, end)

        def events(self):
            calls.append("all")
            return super().events()

    stream = [Event(i, EventKind.ACTION, tool="terminal", arguments={"command": f"c{i}"})
              for i in range(100)]
    stream[90] = Event(90, EventKind.ACTION, tool="Edit", arguments={"file_path": "m.py"})
    finish = Finish.from_json({"api_version": "0.1.0", "skill": {"name": "s", "version": "1"},
                               "signal": "s", "iteration": 1, "session": "x",
                               "patch": {"base": "", "raw": "", "files": []}})
    previous = host.use(Counting(stream))
    try:
        tail = finish.events_from_last(is_file_edit)
    finally:
        host.use(previous)
    assert [e.index for e in tail] == list(range(90, 100))
    assert "all" not in calls and calls[0] == (84, 100)


def test_the_diff_reader_reads_what_git_prints():
    files = parse(DIFF)
    assert [(f.path, f.status, f.added, f.removed) for f in files] == [
        ("src/m.py", FileStatus.MODIFIED, 1, 1), ("tests/test_m.py", FileStatus.ADDED, 2, 0)]
    hunk = files[0].hunks[0]
    assert hunk.section == "def f():"
    assert [(ln.kind, ln.old_line, ln.new_line) for ln in hunk.lines] == [
        (LineKind.CONTEXT, 1, 1), (LineKind.REMOVED, 2, None), (LineKind.ADDED, None, 2),
        (LineKind.CONTEXT, 3, 3)]
    assert files[0].added_lines() == [(2, "y = 3")]
    renamed = parse('diff --git "a/t\\303\\251st.py" "b/n\\303\\251w.py"\nsimilarity index 100%\n'
                    'rename from "t\\303\\251st.py"\nrename to "n\\303\\251w.py"\n')
    assert (renamed[0].path, renamed[0].old_path, renamed[0].status) == (
        "néw.py", "tést.py", FileStatus.RENAMED)
    spaced = parse("diff --git a/my file.py b/my file.py\ndeleted file mode 100644\n")
    assert (spaced[0].path, spaced[0].status) == ("my file.py", FileStatus.DELETED)
    no_newline = parse("diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n")
    assert no_newline[0].hunks[0].lines[1].text == "y"
    assert parse("not a diff\n") == []
    with pytest.raises(DiffError, match="line 2: patch fragment without header"):
        parse("not a diff\n@@ -1 +1 @@\n-a\n+b\n")
    around = parse("\nThe fix:\n" + "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n"
                   + "-- \n2.47.3\n--- a/src/b.py\n+++ b/src/b.py\n@@ -1 +1 @@\n-x\n+y\n")
    assert [(f.path, f.added) for f in around] == [("a", 1), ("src/b.py", 1)]
    with pytest.raises(DiffError, match="diff ends inside a hunk"):
        parse("diff --git a/a b/a\n@@ -1,2 +1,2 @@\n x\n")
    with pytest.raises(DiffError, match="malformed hunk header"):
        parse("diff --git a/a b/a\n@@ -x +1 @@\n")


def test_commands_pair_by_call_id_else_the_next_observation():
    events = [
        Event(0, EventKind.ACTION, tool="bash", call_id="a", arguments={"command": "one"}),
        Event(1, EventKind.ACTION, tool="bash", call_id="b", arguments={"cmd": "two"}),
        Event(2, EventKind.OBSERVATION, call_id="b", exit_code=2, output="B"),
        Event(3, EventKind.OBSERVATION, call_id="a", exit_code=1, output="A"),
        Event(4, EventKind.ACTION, tool="bash", arguments={"command": "three"}),
        Event(5, EventKind.OBSERVATION, exit_code=0),
        Event(6, EventKind.ACTION, tool="str_replace_editor", arguments={"command": "view"}),
        Event(7, EventKind.ACTION, tool="str_replace_editor", arguments={"command": "create"}),
    ]
    assert [(r.index, r.command, r.exit_code) for r in commands(events)] == [
        (0, "one", 1), (1, "two", 2), (4, "three", 0), (6, "view", None), (7, "create", None)]
    assert last_file_edit(events) == 7
    assert not is_file_edit(events[6])


def test_host_calls_without_a_stand_in_fail_as_a_denied_capability_would():
    def detect(finish):
        critic_sdk.run(RunRequest(argv=["true"]))
        return Verdict.accept()

    with pytest.raises(DetectorFailed, match="HostError: capability `run` has no stand-in"):
        TestInput().run(detect)

    def reads(finish):
        return Verdict.accept(metadata=critic_sdk.read_file_string("a.txt"))

    assert TestInput().file("a.txt", "hello").run(reads).metadata == "hello"
    with pytest.raises(DetectorFailed, match="b.txt: no such file"):
        TestInput().run(lambda f: Verdict.accept(metadata=critic_sdk.read_file_string("b.txt")))


def test_runs_and_the_model_answer_through_their_stand_ins():
    def detect(finish):
        results = critic_sdk.run_matrix([RunRequest(argv=["pytest", "-x"]), RunRequest(argv=["ls"])])
        [answer] = critic_sdk.llm_complete([LlmRequest([ChatMessage("user", "ok?")])])
        critic_sdk.log(critic_sdk.LogLevel.INFO, "judged")
        return Verdict.fire(answer.content, metadata=[r.passed for r in results])

    test = (TestInput()
            .on_run(lambda r: RunResult(exit_code=0 if r.argv[0] == "pytest" else 2))
            .on_llm(lambda r: LlmResult(content="no: " + r.messages[0].content)))
    out = test.run(detect)
    assert (out.followup_text, out.metadata) == ("no: ok?", [True, False])
    assert test.host.logs == [(critic_sdk.LogLevel.INFO, "judged")]


def test_a_detectors_failure_is_a_short_reason_for_the_host():
    def boom(finish):
        raise RuntimeError("x" * 100_000)

    with pytest.raises(DetectorFailed) as failed:
        TestInput().run(boom)
    reason = str(failed.value)
    assert reason.startswith("RuntimeError: xxx") and len(reason) <= MAX_REASON
    assert "in boom" in reason

    with pytest.raises(DetectorFailed, match="detect returned dict, expected critic_sdk.Verdict"):
        TestInput().run(lambda f: {"triggered": True})
    with pytest.raises(DetectorFailed, match="cannot decode detector input"):
        run_detector("{not json", lambda f: Verdict.accept())
    with pytest.raises(DetectorFailed, match="cannot encode the verdict"):
        TestInput().run(lambda f: Verdict.accept(metadata={"x": object()}))
    with pytest.raises(DetectorFailed, match="SystemExit"):
        TestInput().run(lambda f: exit(3))


def test_verdicts_encode_as_the_host_reads_them():
    verdict = Verdict.fire("Run the tests.", metadata={"a": 1}).with_artifact("r.md", "# R")
    assert json.loads(json.dumps(verdict.to_json())) == {
        "triggered": True, "followup_text": "Run the tests.", "metadata": {"a": 1},
        "artifacts": [{"path": "r.md", "content": "# R"}]}
    assert Verdict.accept().to_json() == {"triggered": False}


def test_config_over_defaults_names_an_unknown_field():
    finish = TestInput().signal("gate").config({"a": 2}).build()
    assert finish.config_as({"a": 1, "b": 3}) == {"a": 2, "b": 3}
    with pytest.raises(ValueError, match="signal 'gate': unknown field `c`"):
        TestInput().signal("gate").config({"c": 1}).build().config_as({"a": 1})


def test_unknown_kinds_and_fields_from_a_newer_host_are_kept_apart():
    event = Event.from_json({"index": 0, "kind": "telepathy", "future": 1})
    assert event.kind == EventKind.OTHER
    assert HostError.__mro__[1] is Exception


def test_the_diff_reader_agrees_with_the_hosts_on_odd_input():
    quoted = parse('diff --git "a/x\\777y" "b/x\\777y"\ndeleted file mode 100644\n')
    assert quoted[0].path == "x777y"
    tail = parse('diff --git "a/x\\12" "b/x\\12"\ndeleted file mode 100644\n')
    assert tail[0].path == "x\n"
    crlf = parse("diff --git a/a b/a\r\n--- a/a\r\n+++ b/a\r\n@@ -1 +1 @@\r\n-x\r\n+c\r")
    assert crlf[0].hunks[0].lines[1].text == "c\r"
    plus = parse("diff --git a/a b/a\n@@ -+1,2 ++1,2 @@\x1f f\n x\n y\n")
    assert (plus[0].hunks[0].old_start, plus[0].hunks[0].section) == (1, "\x1f f")
    with pytest.raises(DiffError, match="malformed hunk header"):
        parse("diff --git a/a b/a\n@@ -\u0661 +1 @@\n")
    with pytest.raises(DiffError, match="names lines past"):
        parse("diff --git a/a b/a\n@@ -4294967295,2 +1 @@\n")


def test_tests_are_classified_as_the_host_classifies_them():
    from critic_sdk.glob import is_test, matches
    assert is_test("test_x.py") and is_test("pkg/tests/a/b.py") and is_test("a/b.spec.ts")
    assert not is_test("src/m.py")
    assert matches("**/test_*.py", "test_x.py")
    assert not matches("tests/*", "tests/a/b.py")
    assert matches("{a,test_x}.py", "test_x.py") and matches("[!b]x", "ax")
    finish = TestInput().diff("diff --git a/test_x.py b/test_x.py\ndeleted file mode 100644\n").build()
    assert finish.patch.files[0].is_test
    finish = (TestInput().tests_are(["spec/**"])
              .diff("diff --git a/test_x.py b/test_x.py\ndeleted file mode 100644\n").build())
    assert not finish.patch.files[0].is_test


def test_a_verdict_the_host_could_not_read_is_refused_here():
    with pytest.raises(DetectorFailed, match="Out of range float"):
        TestInput().run(lambda f: Verdict.accept(metadata={"x": float("nan")}))
    with pytest.raises(DetectorFailed, match="lone surrogate"):
        TestInput().run(lambda f: Verdict.fire("\ud800"))


def test_event_bounds_are_clamped_for_the_host():
    previous = host.use(host.NativeHost([Event(0, EventKind.FINISH)]))
    try:
        assert len(critic_sdk.events_range(-5, 2**40)) == 1
    finally:
        host.use(previous)
