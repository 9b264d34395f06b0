"""A trajectory gate: fires when the event stream shows no run of the
configured test command after the agent's last file edit. Only a critic that
sees the events can know this; the patch alone cannot tell."""

from critic_sdk import Finish, Verdict, commands, is_file_edit, last_file_edit

DEFAULTS = {
    # A command counts as a test run when it contains one of these strings.
    "test_commands": ["pytest"],
    # Also require that run to exit 0.
    "require_pass": False,
}


def detect(finish: Finish) -> Verdict:
    config = finish.config_as(DEFAULTS)
    wanted_list = config["test_commands"]
    if not isinstance(wanted_list, list) or not all(isinstance(c, str) for c in wanted_list):
        raise ValueError(f"invalid config for signal '{finish.signal}': test_commands must be a list of strings")
    if not isinstance(config["require_pass"], bool):
        raise ValueError(f"invalid config for signal '{finish.signal}': require_pass must be true or false")
    if any(not c.strip() for c in wanted_list):
        raise ValueError("config.test_commands has an empty entry")
    # Only the stream from the last file edit on can hold the runs that count.
    events = finish.events_from_last(is_file_edit)
    last_edit = last_file_edit(events)
    after_edit = [
        r for r in commands(events)
        if (last_edit is None or r.index > last_edit)
        and any(t in r.command for t in wanted_list)
    ]
    wanted = "` or `".join(wanted_list)
    metadata = {
        "last_edit_event": last_edit,
        "test_runs_after_edit": [
            {"event": r.index, "command": r.command, "exit_code": r.exit_code} for r in after_edit
        ],
    }
    if not after_edit:
        when = "at all" if last_edit is None else f"after your last file edit (event {last_edit})"
        return Verdict.fire(
            f"You did not run the tests {when}. Run `{wanted}` on the current code, read the "
            "result, fix what fails, and finish again.",
            metadata=metadata,
        )
    last_run = after_edit[-1]
    if config["require_pass"] and last_run.exit_code != 0:
        code = "an unknown status" if last_run.exit_code is None else f"exit code {last_run.exit_code}"
        return Verdict.fire(
            f"Your last test run (`{last_run.command}`) ended with {code}. "
            "Make the tests pass, then finish again.",
            metadata=metadata,
        )
    return Verdict.accept(metadata=metadata)
