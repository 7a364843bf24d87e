"""Building pairwise and jury runs the way the CLI and the web do, from files in memory."""

import json

from judgeapp.judging.content import InputFile
from judgeapp.jury.services import jury_run_create
from judgeapp.models import Executor
from judgeapp.pairwise.services import VersionSource, pairwise_run_create
from tests.factories import BAD_REPLY, GOOD_REPLY, RUBRIC_ONE, testset_bytes


def jsonl(rows) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode() + b"\n"


def outputs_file(name: str, replies: dict[str, str]) -> InputFile:
    return InputFile(data=jsonl({"id": k, "output": v} for k, v in replies.items()), name=name)


def case_ids(n: int) -> list[str]:
    return [f"c{i:03d}" for i in range(n)]


def good_and_bad(n: int, *, a_better=lambda i: True) -> tuple[dict, dict]:
    """Outputs of A and B: on each case one has the good reply and the other the bad one."""
    a, b = {}, {}
    for i, case_id in enumerate(case_ids(n)):
        better = a_better(i)
        a[case_id] = f"{GOOD_REPLY} (case {i})" if better else f"{BAD_REPLY} (case {i})"
        b[case_id] = f"{BAD_REPLY} (case {i})" if better else f"{GOOD_REPLY} (case {i})"
    return a, b


def pairwise_run(*, judge, n=4, a=None, b=None, system_a=None, system_b=None, executor=Executor.INLINE,
                 rubric=RUBRIC_ONE, **kwargs):
    if a is None and system_a is None and b is None and system_b is None:
        a, b = good_and_bad(n)
    return pairwise_run_create(
        testset=InputFile(data=testset_bytes(n, output=None), name="support.jsonl"),
        rubric=InputFile(data=rubric, name="rubric.toml"),
        judge=judge,
        version_a=VersionSource(outputs=outputs_file("out_a.jsonl", a) if a is not None else None, system=system_a),
        version_b=VersionSource(outputs=outputs_file("out_b.jsonl", b) if b is not None else None, system=system_b),
        executor=executor,
        **kwargs,
    )


def jury_run(*, judges, n=4, system=None, executor=Executor.INLINE, output=lambda i: GOOD_REPLY if i % 2 == 0 else BAD_REPLY,
             **kwargs):
    """A jury run; one labelled with a system that generates nothing judges the system's own outputs (the
    test set's replies given as its outputs file): it never judges the test set's."""
    if system is not None and not ({"generate", "outputs", "output_set", "outputs_version"} & set(kwargs)) and output:
        replies = "".join(json.dumps({"id": f"c{i:03d}", "output": output(i)}) + "\n" for i in range(n))
        kwargs["outputs"] = InputFile(data=replies.encode(), name=f"{system.name}.outputs.jsonl")
    return jury_run_create(
        testset=InputFile(data=testset_bytes(n, output=output), name="support.jsonl"),
        rubric=InputFile(data=RUBRIC_ONE, name="rubric.toml"),
        judges=judges,
        system=system,
        executor=executor,
        **kwargs,
    )


def run_evaluate(capsys, *argv: str) -> tuple[int, str, str]:
    """`manage.py evaluate …` in this process, as a shell runs it: (exit status, stdout, stderr).

    Needs `transactional_db`: the command closes the database connections when it ends.
    """
    from judgeapp.management.commands.evaluate import Command

    capsys.readouterr()
    try:
        Command().run_from_argv(["manage.py", "evaluate", *argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def write_files(folder, *, n=4, a=None, b=None, testset_outputs=None):
    """Test set, rubric and both versions' outputs as files; returns their paths by name."""
    from tests.factories import testset_bytes

    if a is None and b is None:
        a, b = good_and_bad(n)
    paths = {
        "testset": folder / "testset.jsonl", "rubric": folder / "rubric.toml", "a": folder / "out_a.jsonl",
        "b": folder / "out_b.jsonl",
    }
    paths["testset"].write_bytes(testset_bytes(n, output=testset_outputs))
    paths["rubric"].write_bytes(RUBRIC_ONE)
    if a is not None:
        paths["a"].write_bytes(jsonl({"id": k, "output": v} for k, v in a.items()))
    if b is not None:
        paths["b"].write_bytes(jsonl({"id": k, "output": v} for k, v in b.items()))
    return {k: str(v) for k, v in paths.items()}
