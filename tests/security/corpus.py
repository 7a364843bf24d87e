"""The attack corpus: hostile input files, flags and form posts, each with its entry point and the one line
it must be refused with (tests/security/test_inputs.py runs them and checks that every stored row and every
file under DATA_DIR is byte-identical afterwards, and that no judge was called).

A command case: `argv` (with `{d}` standing for the case's folder), `files` written there first (on top
of the valid defaults below), `expect` a piece of the one error line, exit status 2. A form case: the URL
name, the fields (`{judge}` standing for a judge's id), the uploads, and the piece of the form error the
page must show (status 400, never 500).
"""

import json
from dataclasses import dataclass, field

TESTSET = b'{"id": "c1", "input": "How do I reset my password?", "output": "Settings > Password."}\n' \
          b'{"id": "c2", "input": "Where is my invoice?", "output": "Billing > Invoices."}\n' \
          b'{"id": "c3", "input": "Can I change my e-mail?", "output": "Yes, in Profile."}\n'
OUTPUTS = b'{"id": "c1", "output": "Settings."}\n{"id": "c2", "output": "Billing."}\n{"id": "c3", "output": "Profile."}\n'


def rubric(scale: dict | str, *, name: str = "support", criterion: str = "helpfulness") -> bytes:
    """A TOML rubric with one criterion and the given scale (a dict of key -> text, or a TOML inline table)."""
    table = scale if isinstance(scale, str) else "{ " + ", ".join(
        f"{json.dumps(str(k))} = {json.dumps(v)}" for k, v in scale.items()
    ) + " }"
    return (
        f'name = {json.dumps(name)}\n[[criteria]]\nname = {json.dumps(criterion)}\ndescription = "Does it help?"\nscale = '
        f'{table}\n'.encode()
    )


RUBRIC = rubric({p: f"level {p}" for p in range(1, 6)})
DEFAULT_FILES = {
    "testset.jsonl": TESTSET,
    "rubric.toml": RUBRIC,
    "a.jsonl": OUTPUTS,
    "b.jsonl": OUTPUTS,
    "task.md": b"Plot the accuracy to out/accuracy.png.\n",
    "requirements.txt": b"1. saves the plot to out/accuracy.png\n",
    "ws/out/accuracy.png": b"\x89PNG fake",
    "prompt.md": b"Write a runbook for rotating the database password.\n",
    "A/runbook.md": b"# Runbook\n1. Notify the on-call engineer.\n",
    "B/runbook.md": b"# Runbook\n1. Rotate the password.\n",
    "one.md": b"first candidate\n",
    "two.md": b"second candidate\n",
    "cands/one.md": b"first candidate\n",
    "cands/two.md": b"second candidate\n",
}

DEEP_ARRAY = b"[" * 200_000
DEEP_OBJECT = (b'{"a": ' * 100) + b"1" + (b"}" * 100)  # valid JSON, 100 levels
HUGE_INT = b'{"id": ' + b"9" * 5000 + b', "input": "x"}\n'
LONG = "x" * 300
# A path longer than the columns that keep it: five folders of 220 characters.
DEEP_DIR = "/".join(["d" * 220] * 5)


@dataclass
class Attack:
    id: str
    entry: str  # the command or form, as a person would name it
    expect: str  # a piece of the one-line error (or the form error)
    argv: list[str] | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    url: str = ""  # a form case: the URL name
    data: dict = field(default_factory=dict)
    uploads: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    settings: dict = field(default_factory=dict)
    exit: int = 2


def pointwise(*extra):
    return [
        "evaluate", "pointwise", "--testset", "{d}/testset.jsonl", "--rubric", "{d}/rubric.toml", "--judge", "judge-a", *extra,
    ]


def pairwise(*extra):
    return ["evaluate", "pairwise", "--testset", "{d}/testset.jsonl", "--rubric", "{d}/rubric.toml", "--a", "{d}/a.jsonl",
            "--b", "{d}/b.jsonl", "--judge", "judge-a", *extra]


JURY = [
    "evaluate", "jury", "--testset", "{d}/testset.jsonl", "--rubric", "{d}/rubric.toml", "--judges", "judge-a,judge-b,judge-c",
]
AGENT = [
    "agent-judge", "--task", "{d}/task.md", "--requirements", "{d}/requirements.txt", "--workspace", "{d}/ws", "--judge",
    "judge-a",
]
BLIND = ["blind-compare", "--version", "A={d}/A", "--version", "B={d}/B", "--prompt", "{d}/prompt.md", "--output", "{d}/c.json",
         "--judge", "judge-a"]
LABELS_HEADER = b"run_id,case_id,criterion,annotator,label\n"

ATTACKS = [
    # --- Nesting and size limits: one line, never a RecursionError ------------------------------------------
    Attack("deep-array-testset", "evaluate pointwise --testset", "nested more than 32 levels deep",
           pointwise(), {"testset.jsonl": DEEP_ARRAY}),
    Attack("deep-object-testset", "evaluate pointwise --testset", "nested more than 32 levels deep",
           pointwise(), {"testset.jsonl": DEEP_OBJECT + b"\n"}),
    Attack(
        "huge-int-testset", "evaluate pointwise --testset", "Exceeds the limit (4300 digits)", pointwise(),
        {"testset.jsonl": HUGE_INT},
    ),
    Attack("deep-array-outputs", "evaluate pairwise --a", "a.jsonl line 1: nested more than 32 levels deep",
           pairwise(), {"a.jsonl": DEEP_ARRAY}),
    Attack("huge-int-outputs", "evaluate pairwise --b", "Exceeds the limit (4300 digits)",
           pairwise(), {"b.jsonl": b'{"id": ' + b"7" * 5000 + b', "output": "x"}\n'}),
    Attack("deep-json-rubric", "evaluate pointwise --rubric (JSON)", "rubric.json: nested more than 32 levels deep",
           pointwise()[:5] + ["{d}/rubric.json", "--judge", "judge-a"], {"rubric.json": DEEP_ARRAY}),
    Attack("deep-toml-rubric", "evaluate pointwise --rubric (TOML)", "rubric.toml: nested more than 32 levels deep",
           pointwise(), {"rubric.toml": b"a = " + DEEP_ARRAY}),
    Attack("deep-toml-jury-rubric", "evaluate jury --rubric", "nested more than 32 levels deep",
           JURY, {"rubric.toml": b"x = " + b"[" * 50 + b"1" + b"]" * 50 + b"\n"}),
    Attack("deep-requirements", "agent-judge --requirements (JSON)", "requirements.json: nested more than 32 levels deep",
           AGENT[:4] + ["{d}/requirements.json"] + AGENT[5:], {"requirements.json": DEEP_ARRAY}),
    Attack("deep-trace-array", "agent-judge --trace (JSON array)", "trace.json: nested more than 32 levels deep",
           AGENT + ["--trace", "{d}/trace.json"], {"trace.json": DEEP_ARRAY}),
    Attack("deep-trace-line", "agent-judge --trace (JSONL)", "trace.jsonl line 2: nested more than 32 levels deep",
           AGENT + ["--trace", "{d}/trace.jsonl"], {"trace.jsonl": b'{"step": 1}\n' + DEEP_OBJECT + b"\n"}),
    Attack("deep-expectations", "blind-compare --expectations", "expectations.json: nested more than 32 levels deep",
           BLIND + ["--expectations", "{d}/expectations.json"], {"expectations.json": DEEP_ARRAY}),
    Attack("deep-judges-file", "judges file (JUDGES_FILE)", "nested more than 32 levels deep",
           pointwise(), {"judges.toml": b"[judges.x]\nmodel = 'm'\nextra = " + DEEP_ARRAY},
           settings={"JUDGES_FILE": "{d}/judges.toml"}),
    Attack("input-over-size", "evaluate pointwise --testset over INPUT_MAX_BYTES", "over the limit of 1,000 (INPUT_MAX_BYTES)",
           pointwise(), {"testset.jsonl": TESTSET * 20}, settings={"INPUT_MAX_BYTES": 1000}),
    # --- Strict CSV: refused with its line, never merged -----------------------------------------------------
    Attack("csv-unterminated-quote", "evaluate pointwise --testset (CSV)", "testset.csv line 3: a quoted field is never closed",
           pointwise()[:3] + ["{d}/testset.csv"] + pointwise()[4:],
           {"testset.csv": b'id,input,output\nc1,hi,ok\nc2,"hello,there\nc3,bye,fine\n'}),
    Attack("csv-stray-quote", "evaluate pointwise --testset (CSV)", 'testset.csv line 2: a quote inside a quoted field must be '
           'doubled',
           pointwise()[:3] + ["{d}/testset.csv"] + pointwise()[4:], {"testset.csv": b'id,input,output\nc1,"ab"c,ok\n'}),
    Attack("csv-too-few-fields", "evaluate pointwise --testset (CSV)", "testset.csv line 3: 2 fields, fewer than the header's 3",
           pointwise()[:3] + ["{d}/testset.csv"] + pointwise()[4:], {"testset.csv": b"id,input,output\nc1,hi,ok\nc2,hello\n"}),
    Attack("csv-duplicate-header", "evaluate pointwise --testset (CSV)", "header column 'input' appears twice",
           pointwise()[:3] + ["{d}/testset.csv"] + pointwise()[4:], {"testset.csv": b"id,input,input\nc1,hi,ok\n"}),
    Attack("csv-huge-field", "evaluate pointwise --testset (CSV)",
           "testset.csv line 2: a field is longer than 131,072 characters",
           pointwise()[:3] + ["{d}/testset.csv"] + pointwise()[4:], {"testset.csv": b"id,input\nc1," + b"y" * 140_000 + b"\n"}),
    Attack("csv-late-nul", "evaluate pointwise --testset (CSV)", "looks like a binary file (it has NUL bytes)",
           pointwise()[:3] + ["{d}/testset.csv"] + pointwise()[4:],
           {"testset.csv": b"id,input\n" + b"".join(b"c%d,hello\n" % i for i in range(1500)) + b"c9999,a\x00b\n"}),
    Attack("labels-unterminated-quote", "import-labels", "labels.csv line 2: a quoted field is never closed",
           ["import-labels", "{d}/labels.csv"],
           {"labels.csv": LABELS_HEADER + b'r1,c1,helpfulness,"ann,4\nr1,c2,helpfulness,bob,3\n'}),
    Attack("labels-too-few-fields", "import-labels", "labels.csv line 2: 4 fields, fewer than the header's 5",
           ["import-labels", "{d}/labels.csv"], {"labels.csv": LABELS_HEADER + b"r1,c1,helpfulness,ann\n"}),
    # --- Output ids, run ids ---------------------------------------------------------------------------------
    Attack("unknown-output-ids", "evaluate pairwise --a", "output(s) for id(s) not in the test set: c9, c10 (version A)",
           pairwise(), {"a.jsonl": OUTPUTS + b'{"id": "c9", "output": "x"}\n{"id": "c10", "output": "y"}\n'}),
    Attack("output-id-object", "evaluate pairwise --b", "'id' must be a text or a number",
           pairwise(), {"b.jsonl": b'{"id": {"x": 1}, "output": "x"}\n'}),
    Attack(
        "empty-run-id-compare", "compare --run-id ''", "the run id is empty",
        ["compare", "{d}/one.md", "{d}/two.md", "--judge", "judge-a", "--run-id", ""],
    ),
    Attack(
        "blank-run-id-compare", "compare --run-id '  '", "the run id is empty",
        ["compare", "{d}/one.md", "{d}/two.md", "--judge", "judge-a", "--run-id", "  "],
    ),
    Attack(
        "empty-run-id-rank", "rank --run-id ''", "the run id is empty",
        ["rank", "{d}/cands", "--goal", "g", "--judge", "judge-a", "--run-id", ""],
    ),
    Attack("empty-run-id-pointwise", "evaluate pointwise --run-id ''", "the run id is empty", pointwise("--run-id", "")),
    Attack("empty-run-id-pairwise", "evaluate pairwise --run-id ''", "the run id is empty", pairwise("--run-id", "")),
    Attack("empty-run-id-jury", "evaluate jury --run-id ''", "the run id is empty", JURY + ["--run-id", ""]),
    Attack("empty-run-id-agent", "agent-judge --run-id ''", "the run id is empty", AGENT + ["--run-id", ""]),
    Attack("empty-run-id-blind", "blind-compare --run-id ''", "the run id is empty", BLIND + ["--run-id", ""]),
    Attack("empty-run-id-gate", "gate ''", "the run id is empty", ["gate", ""]),
    Attack("long-title", "evaluate pointwise --title", "--title is 301 characters long, over the limit of 300",
           pointwise("--title", LONG + "x")),
    Attack("slash-run-id", "evaluate pointwise --run-id ../x", "use letters, digits", pointwise("--run-id", "../x")),
    # --- Field lengths, checked before the database sees them ------------------------------------------------
    Attack("long-annotator", "import-labels", "the annotator is 300 characters long, over the limit of 150",
           ["import-labels", "{d}/labels.csv"], {"labels.csv": LABELS_HEADER + f"r1,c1,helpfulness,{LONG},4\n".encode()}),
    Attack("long-label-run-id", "import-labels", "the run_id is 300 characters long, over the limit of 100",
           ["import-labels", "{d}/labels.csv"], {"labels.csv": LABELS_HEADER + f"{LONG},c1,helpfulness,ann,4\n".encode()}),
    Attack("long-case-id", "evaluate pointwise --testset", "the id is 300 characters long, over the limit of 150",
           pointwise(), {"testset.jsonl": json.dumps({"id": LONG, "input": "x", "output": "y"}).encode() + b"\n"}),
    Attack("long-output-id", "evaluate pairwise --a", "the id is 300 characters long, over the limit of 150",
           pairwise(), {"a.jsonl": json.dumps({"id": LONG, "output": "y"}).encode() + b"\n"}),
    Attack("long-criterion-name", "evaluate pointwise --rubric", "the criterion's 'name' is 300 characters long, over the limit "
           "of 100",
           pointwise(), {"rubric.toml": rubric({p: "x" for p in range(1, 6)}, criterion=LONG)}),
    Attack("long-rubric-name", "evaluate pointwise --rubric", "the rubric's 'name' is 300 characters long, over the limit of 200",
           pointwise(), {"rubric.toml": rubric({p: "x" for p in range(1, 6)}, name=LONG)}),
    Attack("long-testset-file-name", "evaluate pointwise --testset", "the file name (the test set's name) is 240 characters long",
           pointwise()[:3] + ["{d}/" + "t" * 240 + ".jsonl"] + pointwise()[4:], {"t" * 240 + ".jsonl": TESTSET}),
    Attack("long-judge-model", "judges file (JUDGES_FILE)", "model is 300 characters long, over the limit of 200",
           pointwise(), {"judges.toml": f"[judges.x]\nmodel = '{LONG}'\n".encode()}, settings={"JUDGES_FILE": "{d}/judges.toml"}),
    Attack("judge-family-not-text", "judges file (JUDGES_FILE)", "family must be a text",
           pointwise(), {"judges.toml": b"[judges.x]\nmodel = 'm'\nfamily = 5\n"}, settings={"JUDGES_FILE": "{d}/judges.toml"}),
    Attack("long-version-name", "blind-compare --version", "the version's name is",
           ["blind-compare", "--version", f"A={{d}}/{DEEP_DIR}", "--version", "B={d}/B", "--prompt", "{d}/prompt.md",
            "--output", "{d}/c.json", "--judge", "judge-a"], {f"{DEEP_DIR}/runbook.md": b"# Runbook\n"}),
    Attack("long-candidate-path", "compare FILE_A", "paths longer than 1,000 characters are not supported",
           ["compare", f"{{d}}/{DEEP_DIR}/one.md", "{d}/two.md", "--judge", "judge-a"], {f"{DEEP_DIR}/one.md": b"first\n"}),
    # --- Rubric scales: exactly 1-5 --------------------------------------------------------------------------
    Attack("scale-0-10", "evaluate pointwise --rubric", "'scale' must define exactly the scores 1 to 5 (the Pointwise 1-5 "
           "scale), got 0, 1, 2",
           pointwise(), {"rubric.toml": rubric({p: "x" for p in range(0, 11)})}),
    Attack(
        "scale-1-3", "evaluate pointwise --rubric", "got 1, 2, 3", pointwise(),
        {"rubric.toml": rubric({p: "x" for p in range(1, 4)})},
    ),
    Attack("scale-minus-2-2", "evaluate pointwise --rubric", "'scale' key '-2' is not an integer score (use 1 to 5)",
           pointwise(), {"rubric.toml": rubric({p: "x" for p in range(-2, 3)})}),
    Attack("scale-100000", "evaluate pointwise --rubric", "got 100,000 scores from 1 to 100000",
           pointwise(), {"rubric.toml": rubric({p: "x" for p in range(1, 100_001)})}),
    Attack("scale-5-and-05", "evaluate pointwise --rubric", "'scale' gives score 5 twice (keys '5' and '05')",
           pointwise(), {"rubric.toml": rubric({**{str(p): "x" for p in range(1, 6)}, "05": "y"})}),
    Attack("scale-arabic-digit", "evaluate pointwise --rubric", "'scale' key '٥' is not an integer score",
           pointwise(), {"rubric.toml": rubric({**{str(p): "x" for p in range(1, 5)}, "٥": "y"})}),
    Attack(
        "scale-jury", "evaluate jury --rubric", "must define exactly the scores 1 to 5", JURY,
        {"rubric.toml": rubric({p: "x" for p in range(0, 11)})},
    ),
    Attack("scale-json-rubric", "evaluate pairwise --rubric (JSON)", "gives score 5 twice",
           pairwise()[:5] + ["{d}/rubric.json"] + pairwise()[6:],
           {"rubric.json": json.dumps({"name": "r", "criteria": [{"name": "h", "description": "d",
                                      "scale": {**{str(p): "x" for p in range(1, 6)}, "005": "y"}}]}).encode()}),
    # --- Text a database cannot keep: a NUL, a lone surrogate, a byte that is not UTF-8 (issue 26) -----------
    Attack("nul-escape-testset", "evaluate pointwise --testset", "testset.jsonl line 2: 'input' holds a NUL character (\\u0000) "
           "at character 6",
           pointwise(),
           {
               "testset.jsonl": (
                   TESTSET.splitlines(keepends=True)[0] + b'{"id": "c2", "input": "Where\\u0000 is it?", "output": "x"}\n'
               )
           }),
    Attack("surrogate-escape-testset-extra", "evaluate pointwise --testset", "testset.jsonl line 1: 'meta.tags[1]' holds a lone "
           "surrogate (\\ud800)",
           pointwise(), {"testset.jsonl": b'{"id": "c1", "input": "hi", "output": "ok", "meta": {"tags": ["a", "\\ud800"]}}\n'}),
    Attack("nul-escape-outputs", "evaluate pointwise --outputs", "a.jsonl line 3: 'output' holds a NUL character",
           pointwise("--outputs", "{d}/a.jsonl"), {"a.jsonl": OUTPUTS.replace(b'"Profile."', b'"Pro\\u0000file."')}),
    Attack("surrogate-escape-outputs", "evaluate pairwise --a", "a.jsonl line 1: 'output' holds a lone surrogate (\\udfff) at "
           "character 3",
           pairwise(), {"a.jsonl": OUTPUTS.replace(b'"Settings."', b'"Se\\udfffttings."')}),
    Attack("surrogate-escape-output-id", "evaluate pairwise --b", "b.jsonl line 2: 'id' holds a lone surrogate",
           pairwise(), {"b.jsonl": OUTPUTS.replace(b'"c2"', b'"c\\ud83d"')}),
    Attack("nul-escape-toml-rubric", "evaluate pointwise --rubric (TOML)", "rubric.toml line 4: 'criteria[0].description' holds "
           "a NUL character",
           pointwise(), {"rubric.toml": RUBRIC.replace(b'"Does it help?"', b'"Does it\\u0000 help?"')}),
    Attack("surrogate-escape-json-rubric", "evaluate jury --rubric (JSON)", "rubric.json line 1: 'criteria[0].scale.3' holds a "
           "lone surrogate",
           JURY[:5] + ["{d}/rubric.json"] + JURY[6:],
           {"rubric.json": json.dumps({"name": "r", "criteria": [{"name": "h", "description": "d",
                                      "scale": {str(p): ("\ud800" if p == 3 else "x") for p in range(1, 6)}}]}).encode()}),
    Attack("nul-escape-requirements", "agent-judge --requirements (JSON)", "requirements.json line 1: '[1]' holds a NUL",
           AGENT[:4] + ["{d}/requirements.json"] + AGENT[5:], {"requirements.json": b'["saves the plot", "\\u0000"]'}),
    Attack("nul-escape-expectations", "blind-compare --expectations", "expectations.json",
           BLIND + ["--expectations", "{d}/expectations.json"], {"expectations.json": b'["covers rotation\\u0000"]'}),
    Attack("nul-escape-judges-file", "judges file (JUDGES_FILE)", "judges.toml line 2: 'judges.x.model' holds a NUL character",
           pointwise(), {"judges.toml": b"[judges.x]\nmodel = \"m\\u0000\"\n"}, settings={"JUDGES_FILE": "{d}/judges.toml"}),
    Attack("nul-byte-testset-line", "evaluate pointwise --testset", "testset.jsonl line 3: looks like a binary file (it has NUL "
           "bytes)",
           pointwise(), {"testset.jsonl": TESTSET.replace(b"change my", b"change\x00my")}),
    Attack("non-utf8-title", "evaluate pointwise --title", "--title holds a byte that is not UTF-8 (\\xff) at character 8",
           pointwise("--title", "nightly\udcff")),
    Attack("non-utf8-run-id-flag", "evaluate pairwise --run-id=…", "--run-id holds a byte that is not UTF-8 (\\xe9)",
           pairwise("--run-id=r\udce9")),
    Attack("non-utf8-testset-path", "evaluate pointwise --testset (a file name not in UTF-8)", "--testset holds a byte that is "
           "not UTF-8 (\\xff)",
           pointwise()[:3] + ["{d}/t\udcff.jsonl"] + pointwise()[4:], {"t\udcff.jsonl": TESTSET}),
    Attack(
        "non-utf8-gate-run-id", "gate RUN_ID", "argument 1 ('r\\xfe') holds a byte that is not UTF-8 (\\xfe)",
        ["gate", "r\udcfe"],
    ),
    Attack("unknown-output-ids-pointwise", "evaluate pointwise --outputs", "a.jsonl: 2 output(s) for id(s) not in the test set: "
           "c9, c10;",
           pointwise("--outputs", "{d}/a.jsonl"),
           {"a.jsonl": OUTPUTS + b'{"id": "c9", "output": "x"}\n{"id": "c10", "output": "y"}\n'}),
    Attack("many-unknown-output-ids", "evaluate pairwise --b", "b.jsonl: 12 output(s) for id(s) not in the test set: x0, x1, x2, "
           "x3, x4, x5, x6, x7, x8, x9 and 2 more (version B)",
           pairwise(), {"b.jsonl": OUTPUTS + b"".join(b'{"id": "x%d", "output": "o"}\n' % i for i in range(12))}),
    # --- Web forms: a form error, never a 500 ----------------------------------------------------------------
    Attack("form-deep-testset", "pointwise form, test set upload", "nested more than 32 levels deep", url="pointwise:new",
           data={"judge": "{judge}", "threshold": "3.5"},
           uploads={"testset_file": ("t.jsonl", DEEP_ARRAY), "rubric_file": ("r.toml", RUBRIC)}),
    Attack("form-deep-rubric", "pointwise form, rubric upload", "nested more than 32 levels deep", url="pointwise:new",
           data={"judge": "{judge}", "threshold": "3.5"},
           uploads={"testset_file": ("t.jsonl", TESTSET), "rubric_file": ("r.json", DEEP_ARRAY)}),
    Attack("form-scale-0-10", "pointwise form, rubric upload", "must define exactly the scores 1 to 5", url="pointwise:new",
           data={"judge": "{judge}", "threshold": "3.5"},
           uploads={"testset_file": ("t.jsonl", TESTSET), "rubric_file": ("r.toml", rubric({p: "x" for p in range(0, 11)}))}),
    Attack("form-csv-unterminated", "pointwise form, CSV test set upload", "t.csv line 3: a quoted field is never closed",
           url="pointwise:new",
           data={"judge": "{judge}", "threshold": "3.5"},
           uploads={
               "testset_file": ("t.csv", b'id,input,output\nc1,hi,ok\nc2,"hello\nc3,bye,fine\n'),
               "rubric_file": ("r.toml", RUBRIC),
           }),
    Attack("form-unknown-output-ids", "pairwise form, outputs upload", "output(s) for id(s) not in the test set: c9",
           url="pairwise:new",
           data={"judge": "{judge}"}, uploads={"testset_file": ("t.jsonl", TESTSET), "rubric_file": ("r.toml", RUBRIC),
                                               "a_file": ("a.jsonl", OUTPUTS + b'{"id": "c9", "output": "x"}\n'),
                                               "b_file": ("b.jsonl", OUTPUTS)}),
    Attack("form-deep-outputs", "pairwise form, outputs upload", "nested more than 32 levels deep", url="pairwise:new",
           data={"judge": "{judge}"}, uploads={"testset_file": ("t.jsonl", TESTSET), "rubric_file": ("r.toml", RUBRIC),
                                               "a_file": ("a.jsonl", OUTPUTS), "b_file": ("b.jsonl", DEEP_ARRAY)}),
    Attack("form-jury-dup-keys", "jury form, rubric upload", "gives score 5 twice", url="jury:new",
           data={"judges": ["{judge}", "{judge_b}", "{judge_c}"]},
           uploads={
               "testset_file": ("t.jsonl", TESTSET),
               "rubric_file": ("r.toml", rubric({**{str(p): "x" for p in range(1, 6)}, "05": "y"})),
           }),
    Attack("form-agent-deep-requirements", "agent form, requirements upload", "nested more than 32 levels deep", url="agent:home",
           data={"task": "Plot it.", "judge": "{judge}"},
           uploads={"requirements_file": ("req.json", DEEP_ARRAY), "workspace": ("ws.zip", b"PK\x05\x06" + b"\x00" * 18)}),
    Attack("form-agent-deep-trace", "agent form, trace upload", "nested more than 32 levels deep", url="agent:home",
           data={"task": "Plot it.", "requirements": "1. saves the plot", "judge": "{judge}"},
           uploads={"trace": ("trace.json", DEEP_ARRAY), "workspace": ("ws.zip", b"PK\x05\x06" + b"\x00" * 18)}),
    Attack("form-nul-escape-testset", "pointwise form, test set upload", "t.jsonl line 1: 'output' holds a NUL character",
           url="pointwise:new",
           data={"judge": "{judge}", "threshold": "3.5"},
           uploads={
               "testset_file": ("t.jsonl", b'{"id": "c1", "input": "hi", "output": "o\\u0000k"}\n'),
               "rubric_file": ("r.toml", RUBRIC),
           }),
    Attack("form-surrogate-escape-outputs", "pairwise form, outputs upload", "b.jsonl line 2: 'output' holds a lone surrogate",
           url="pairwise:new",
           data={"judge": "{judge}"}, uploads={"testset_file": ("t.jsonl", TESTSET), "rubric_file": ("r.toml", RUBRIC),
                                               "a_file": ("a.jsonl", OUTPUTS),
                                               "b_file": ("b.jsonl", OUTPUTS.replace(b'"Billing."', b'"\\udc00"'))}),
    Attack("form-nul-title", "pointwise form, title", "Null characters are not allowed.", url="pointwise:new",
           data={"judge": "{judge}", "threshold": "3.5", "title": "night\x00ly"},
           uploads={"testset_file": ("t.jsonl", TESTSET), "rubric_file": ("r.toml", RUBRIC)}),
    Attack("form-nul-run-id", "jury form, run id", "Null characters are not allowed.", url="jury:new",
           data={"judges": ["{judge}", "{judge_b}", "{judge_c}"], "run_id": "r\x00"},
           uploads={"testset_file": ("t.jsonl", TESTSET), "rubric_file": ("r.toml", RUBRIC)}),
    Attack("form-unknown-output-ids-many", "pairwise form, outputs upload",
           "a.jsonl: 11 output(s) for id(s) not in the test set:", url="pairwise:new",
           data={"judge": "{judge}"}, uploads={"testset_file": ("t.jsonl", TESTSET), "rubric_file": ("r.toml", RUBRIC),
                                               "a_file": (
                                                   "a.jsonl",
                                                   OUTPUTS + b"".join(b'{"id": "z%d", "output": "o"}\n' % i for i in range(11)),
                                               ),
                                               "b_file": ("b.jsonl", OUTPUTS)}),
    Attack("form-blind-long-name", "blind form, upload name", "Ensure this value has at most 300 characters", url="blind:new",
           data={"prompt": "Write a runbook.", "judge": "{judge}", "upload_name_0": LONG + "x", "upload_name_1": "other"},
           uploads={"upload_files_0": ("a.md", b"A runbook.\n"), "upload_files_1": ("b.md", b"Another runbook.\n")}),
]
