"""Brains: actions that read a judge prompt and answer it deterministically, the way a judge would.

A brain recognises each seed prompt by its fixed wording, pulls out what it grades, rates it with a
quality function, and answers in the form the prompt asks for. The default quality function is a small
text heuristic (on-topic words, concrete steps, refusals, length) so that the demo's verdicts look
plausible; tests pass their own quality function (an oracle) to know the true answer.

`rubric_aware` makes the pointwise judge read the criterion it is asked about (the support rubric's
helpfulness, accuracy and tone); without it every criterion of a reply gets the same score. Options that
make it a bad judge on purpose: `position_bias` (probability of picking the first reply or
artifact whatever the content) and `noise` (probability of a random verdict), both seeded per prompt, so
the same prompt always gets the same answer.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable

from .protocol import SCRIPTED_NOTE, FakeRequest, Response, completion, make_tool_calls

Quality = Callable[[str, str], float]  # (text graded, context such as the customer message or goal) -> 0..1

_STOP = set(
    "the a an and or but to of in on for with my your our is are was were be been it this that i you we they "
    "have has had do does did not no can could would should will just please hi hello thanks thank there "
    "what when where which who how why from at by as about into than then them their its im ive".split()
)


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z][a-z']+", text.lower())


def support_reply_quality(reply: str, message: str = "") -> float:
    """A plausible, deterministic quality estimate for a customer-support reply."""
    words = _words(reply)
    if not words:
        return 0.0
    lower = reply.lower()
    score = 0.45
    topic = {w for w in _words(message) if len(w) > 3 and w not in _STOP}
    if topic:
        score += 0.35 * len(topic & set(words)) / len(topic)
    if re.search(r"\b(step|click|go to|settings|refund|reset|link|within \d|\d+ (business )?days?|hours?|replace|"
                 r"track|cancel|update|confirm|email)\b", lower):
        score += 0.15
    if re.search(r"\b(sorry|apolog|thanks for|thank you for|happy to help)", lower):
        score += 0.05
    if re.search(r"(can't help|cannot help|not our problem|no idea|i don't know|nothing we can do|"
                 r"contact someone else|figure it out)", lower):
        score -= 0.4
    if len(words) < 8:
        score -= 0.2
    if len(words) > 250:
        score -= 0.1
    return max(0.0, min(1.0, score))


# Replies that brush the customer off: wrong on the facts (or against policy) and rude at once.
_DISMISSIVE = re.compile(
    r"(can't help|cannot help|not our problem|no idea|i don't know|nothing we can do|contact someone else|"
    r"figure it out|maybe it was you|orders are final|read (our|the) (terms|faq))"
)
_WARM = re.compile(r"\b(sorry|apolog|thanks for|thank you for|happy to help)")
_CONCRETE = re.compile(r"\b(settings|click|go to|within \d|\d+ ?(-\d+ )?(business )?(days?|hours?)|i've|i'll|i can)\b")


def support_criterion_score(criterion: str, reply: str, message: str = "") -> int | None:
    """The score a careful reader gives a support reply on one criterion of the support rubric
    (evals/support/rubric.toml), or None for a criterion it does not know. Plain text rules, each a habit
    of the rubric's own examples: a dismissive reply is wrong and rude; a curt one is vague and unhelpful
    but not false; a warm, concrete one scores 5 on every criterion."""
    words = _words(reply)
    lower = reply.lower()
    dismissive = bool(_DISMISSIVE.search(lower))
    curt = len(words) < 8
    warm = bool(_WARM.search(lower))
    name = criterion.strip().lower()
    if name == "helpfulness":
        if dismissive:
            return 1
        if curt:
            return 2
        quality = support_reply_quality(reply, message)
        return 5 if quality >= 0.6 else 4 if quality >= 0.5 else 3
    if name == "accuracy":
        if dismissive:
            return 1 if re.search(r"no idea|not our problem|figure it out|maybe it was you", lower) else 2
        return 3 if curt else 5
    if name == "tone":
        if dismissive:
            return 1 if re.search(r"no idea|not our problem|figure it out|maybe it was you", lower) else 2
        if curt:
            return 2
        if warm:
            return 5 if _CONCRETE.search(lower) else 4
        return 4
    return None


def artifact_quality(artifact: str, goal: str = "") -> float:
    """A plausible quality estimate for a document ranked against a goal: coverage, structure, substance."""
    words = _words(artifact)
    if not words:
        return 0.0
    goal_words = {w for w in _words(goal) if len(w) > 3 and w not in _STOP}
    coverage = len(goal_words & set(words)) / len(goal_words) if goal_words else 0.5
    structure = min(1.0, (artifact.count("\n#") + artifact.count("\n- ") + artifact.count("\n* ")) / 12)
    substance = min(1.0, len(set(words)) / 400)
    return 0.4 * coverage + 0.25 * structure + 0.35 * substance


def _between(text: str, start: str, end: str) -> str | None:
    match = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.S)
    return match.group(1).strip() if match else None


def _unfence(text: str) -> str:
    """Drop a fence the app may have put around an artifact (``` or <<< >>> lines)."""
    lines = text.strip().splitlines()
    if len(lines) >= 2 and (lines[0].startswith("```") or lines[0].startswith("<<<")):
        if lines[-1].startswith("```") or lines[-1].startswith(">>>") or lines[-1].startswith("<<<"):
            lines = lines[1:-1]
    return "\n".join(lines)


def _fenced_block(text: str, label: str, start: int = 0) -> tuple[str, int] | None:
    """The content of the backtick fence that opens right after `label` (at or after `start`), and where
    the block ends. The ranker's prompt fences each artifact with a run longer than any inside it, so
    the first line of at least that many backticks closes it."""
    at = text.find(label, start)
    if at < 0:
        return None
    body_start = at + len(label)
    opening = re.match(r"(`{3,})\n", text[body_start:])
    if not opening:
        return None
    content_start = body_start + len(opening.group(0))
    closing = re.compile(r"^" + opening.group(1) + r"`*[ \t]*$", re.M).search(text, content_start)
    if not closing:
        return None
    return text[content_start : closing.start()].rstrip("\n"), closing.end()


class DemoBrain:
    def __init__(self, *, quality: Quality | None = None, artifact_quality_fn: Quality | None = None,
                 position_bias: float = 0.0, noise: float = 0.0, seed: int = 0, tie_margin: float = 0.02,
                 note: str = SCRIPTED_NOTE, rubric_aware: bool = False):
        self.quality = quality or support_reply_quality
        # Read the criterion a pointwise prompt asks about (support_criterion_score) instead of scoring every
        # criterion of a reply alike: the demo's judge, so that people who label its sample as they read the
        # replies agree with it well enough to calibrate it (README, "the calibration loop").
        self.rubric_aware = rubric_aware
        self.artifact_quality = artifact_quality_fn or artifact_quality
        self.position_bias = position_bias
        self.noise = noise
        self.seed = seed
        self.tie_margin = tie_margin
        self.note = note

    # Deterministic per prompt and model: the same prompt to the same model always draws the same number,
    # and two "models" served by one demo server disagree now and then, as a jury's members do.
    def _rng(self, request: FakeRequest) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}:{request.model}:{request.prompt}".encode()).hexdigest()
        return random.Random(int(digest[:16], 16))

    def _say(self, text: str) -> str:
        return f"{text} {self.note}".strip()

    def __call__(self, request: FakeRequest) -> Response:
        prompt = request.prompt
        # The blind comparator's prompts quote whole outputs, which may hold any other prompt's markers:
        # recognise them first.
        if prompt.startswith("You are deriving the rubric for a blind comparison"):
            return completion(request, self.blind_rubric(request))
        if prompt.startswith("You are scoring one run of one version in a blind comparison"):
            return completion(request, self.blind_score(request))
        if "You are checking whether another agent's work meets one requirement" in prompt:
            return self.agent(request)
        if "Comparison goal:" in prompt and "Artifact A:" in prompt:
            return completion(request, self.ranker(request))
        if "<reply_1>" in prompt:
            return completion(request, self.pairwise(request))
        if "You are one of several independent graders" in prompt:
            return completion(request, self.juror(request))
        if "<assistant_reply>" in prompt:
            return completion(request, self.pointwise(request))
        return completion(request, self.generate(request))

    # --- one answer per seed prompt ----------------------------------------------------------------------

    def pointwise(self, request: FakeRequest) -> str:
        prompt = request.prompt
        reply = _between(prompt, "<assistant_reply>", "</assistant_reply>") or ""
        message = _between(prompt, "<customer_message>", "</customer_message>") or ""
        rng = self._rng(request)
        criterion = _between(prompt, "Criterion: ", "\n") if self.rubric_aware else None
        score = support_criterion_score(criterion, reply, message) if criterion else None
        if score is None:
            score = 1 + round(4 * self.quality(reply, message))
        if rng.random() < self.noise:
            # Rubric-aware, it errs as a careful judge does, by a point; else any score at random. (A random score
            # on a good reply is a rare verdict, which a sample stratified by verdict draws first: in the demo's
            # calibration sample two of them were enough to leave a careful reader's agreement undecided.)
            score = min(5, max(1, score + rng.choice((-1, 1)))) if criterion else rng.randint(1, 5)
        # The reasoning says what the score says, noise included: a newcomer reads the two side by side.
        said = "addresses" if score >= 4 else "only partly addresses" if score == 3 else "misses"
        reasoning = self._say(f"The reply {said} the customer's request, so it scores {score} of 5 on the rubric.")
        return json.dumps({"reasoning": reasoning, "score": score})

    def juror(self, request: FakeRequest) -> str:
        prompt = request.prompt
        reply = _between(prompt, "<assistant_reply>", "</assistant_reply>") or ""
        message = _between(prompt, "<customer_message>", "</customer_message>") or ""
        quality = self.quality(reply, message)
        rng = self._rng(request)
        verdict = "pass" if quality >= 0.55 else "fail"
        if rng.random() < self.noise:
            verdict = rng.choice(["pass", "fail"])
        said = "meets the rubric" if verdict == "pass" else "falls short of the rubric"
        return json.dumps(
            {"reasoning": self._say(f"The reply {said}, so it {'passes' if verdict == 'pass' else 'fails'}."), "verdict": verdict}
        )

    def _prefer(self, request: FakeRequest, first_quality: float, second_quality: float) -> str:
        """'1', '2' or 'tie', with the brain's position bias and noise applied."""
        rng = self._rng(request)
        if rng.random() < self.position_bias:
            return "1"
        if rng.random() < self.noise:
            return rng.choice(["1", "2", "tie"])
        if abs(first_quality - second_quality) <= self.tie_margin:
            return "tie"
        return "1" if first_quality > second_quality else "2"

    def pairwise(self, request: FakeRequest) -> str:
        prompt = request.prompt
        message = _between(prompt, "<customer_message>", "</customer_message>") or ""
        first = _between(prompt, "<reply_1>", "</reply_1>") or ""
        second = _between(prompt, "<reply_2>", "</reply_2>") or ""
        winner = self._prefer(request, self.quality(first, message), self.quality(second, message))
        reasoning = self._say(
            "Both replies are about as good." if winner == "tie" else f"Reply {winner} answers the request better."
        )
        return json.dumps({"reasoning": reasoning, "winner": winner})

    def ranker(self, request: FakeRequest) -> str:
        prompt = request.prompt
        goal = (_between(prompt, "Comparison goal:", "\n") or "").strip()
        block_a = _fenced_block(prompt, "Artifact A:\n")
        block_b = _fenced_block(prompt, "\nArtifact B:\n", block_a[1]) if block_a else None
        if block_a and block_b:
            first, second = block_a[0], block_b[0]
        else:  # artifacts shown without fences
            first = _unfence(_between(prompt, "Artifact A:", "\nArtifact B:") or "")
            second = _unfence(_between(prompt, "Artifact B:", "\nDecide which one better accomplishes the goal") or "")
        preference = self._prefer(request, self.artifact_quality(first, goal), self.artifact_quality(second, goal))
        winner = {"1": "A", "2": "B", "tie": "Equal"}[preference]
        rationale = {
            "A": "Artifact A covers the goal more completely and with more concrete detail than B.",
            "B": "Artifact B covers the goal more completely and with more concrete detail than A.",
            "Equal": "Both artifacts cover the goal to about the same depth; neither has a decisive gap.",
        }[winner]
        return f"WINNER: {winner}\nRATIONALE: {self._say(rationale)}"

    def generate(self, request: FakeRequest) -> str:
        """A system under test answering a customer: a helpful reply built from the message."""
        message = request.messages[-1].get("content", "") if request.messages else ""
        topic = [w for w in _words(message) if len(w) > 3 and w not in _STOP][:4]
        about = ", ".join(topic) if topic else "your request"
        instructions = " ".join(m.get("content", "") for m in request.messages if m.get("role") == "system").lower()
        if "brief" in instructions:
            # A system told to be brief answers in one short line: two versions of a system differ.
            return f"Please check your account about {topic[0] if topic else 'this'}."
        return (
            f"Thanks for reaching out about {about}. I'm sorry for the trouble. Here is what to do: go to "
            f"Settings, confirm the details, and we will update you by email within 2 business days."
        )

    def agent(self, request: FakeRequest) -> Response:
        """A small tool-using judge: look at what the requirement names, then decide on what it saw."""
        return ScriptedAgentJudge(note=self.note)(request)


# --- The agent judge: a scripted user of judgeapp's agent tools ------------------------------------------



    # --- The blind comparator (judgeapp/prompts/blind_rubric.md, blind_score.md) ---------------------------

    def blind_rubric(self, request: FakeRequest) -> str:
        """The four shared criteria, described with the task's own words, plus domain criteria chosen by
        what the task asks for."""
        task = _between(request.prompt, "<task>", "</task>") or ""
        topic = ", ".join(list(_task_words(task).values())[:4]) or "the task"
        criteria = [
            {"name": "correctness", "description": f"What the output says about {topic} is right.",
             "score_1": "Wrong on the main points.", "score_5": "Right throughout."},
            {"name": "completeness", "description": "Every part the task asks for is there.",
             "score_1": "Most of the task is missing.", "score_5": "Nothing the task asks for is missing."},
            {"name": "structure", "description": "Headings, lists and order make it easy to follow.",
             "score_1": "One undivided block.", "score_5": "Clear sections in a sensible order."},
            {"name": "usability", "description": "The reader can act on it as it is: concrete values, names and steps.",
             "score_1": "Vague; the reader must redo the work.", "score_5": "Usable as delivered."},
        ]
        domain = [(name, text) for pattern, name, text in _BLIND_DOMAIN if re.search(pattern, task, re.I)][:2]
        for name, text in domain or [("task_focus", "It stays on what the task asks, without padding.")]:
            criteria.append({"name": name, "description": text, "score_1": "Not at all.", "score_5": "Fully."})
        analysis = self._say(f"The task asks for an output about {topic}; the rubric follows its wording.")
        return json.dumps({"task_analysis": analysis, "criteria": criteria})

    def blind_score(self, request: FakeRequest) -> str:
        """Scores from the run's text: coverage of the task's words, structure, substance, concrete
        details; a run that is empty or starts with an error scores 1 and did not complete."""
        prompt = request.prompt
        task = _between(prompt, "<task>", "</task>") or ""
        block = re.search(r"<version_output [^>]*>\n(.*)</version_output>", prompt, re.S)
        measured = _BlindOutput(block.group(1) if block else "", task)
        rng = self._rng(request)
        values = {
            "correctness": measured.coverage,
            "completeness": 0.5 * measured.coverage + 0.5 * measured.substance,
            "structure": measured.structure,
            "usability": 0.5 * measured.concrete + 0.5 * measured.structure,
        }
        scores = {}
        for name, _description in _tagged(prompt, "criterion"):
            value = values.get(name, 0.5 * measured.coverage + 0.5 * measured.concrete)
            score = 1 if measured.failed else max(1, min(5, 1 + round(4 * value)))
            if rng.random() < self.noise:
                score = max(1, min(5, score + rng.choice([-1, 1])))
            reasoning = self._say(
                "The run stopped before producing the output." if measured.failed
                else f"Measured {name.replace('_', ' ')} at {value:.2f} from the output's text."
            )
            scores[name] = {"reasoning": reasoning, "score": score}
        checks = []
        for number, text in _tagged(prompt, "expectation"):
            wanted = _task_words(text)
            hits = [word for stem, word in wanted.items() if stem in measured.stems]
            missing = [word for stem, word in wanted.items() if stem not in measured.stems]
            passed = not measured.failed and bool(wanted) and len(hits) >= 0.6 * len(wanted)
            evidence = (f"found {', '.join(hits)}" if hits else "found none of its words") + (
                f"; missing {', '.join(missing)}" if missing else "")
            checks.append({"id": int(number), "passed": passed, "evidence": evidence})
        strengths, weaknesses = [], []
        if measured.failed:
            weaknesses.append("The run failed before producing the output")
        else:
            if measured.coverage >= 0.7:
                strengths.append("Covers the task's key points")
            elif measured.missing:
                weaknesses.append("Leaves out: " + ", ".join(measured.missing))
            if measured.structure >= 0.5:
                strengths.append("Clear structure")
            else:
                weaknesses.append("Little structure")
            if measured.concrete >= 0.5:
                strengths.append("Concrete values and steps")
            else:
                weaknesses.append("Few concrete details")
        return json.dumps({"completed": not measured.failed, "scores": scores, "expectations": checks,
                           "strengths": strengths, "weaknesses": weaknesses})


# Domain criteria the demo judge adds to a blind rubric, by what the task asks for.



_AGENT_STOP = _STOP | set(
    "agent agents must should shall will workspace file files using uses used make makes made sure each every "
    "least also only some more most other such very well being into onto trace before after finishing finish "
    "task code project result results output outputs".split()
)
_RUN_WORDS = re.compile(r"\b(run|runs|running|execut\w*|prints?|exits?)\b", re.I)


def _quoted(text: str) -> str:
    """Text quoted as evidence: in double quotes, or in backticks when it has double quotes of its own."""
    return f"`{text}`" if '"' in text else f'"{text}"'


def _requirement_paths(requirement: str) -> list[str]:
    """Paths the requirement names, in order: `backticked` ones first, then anything like dir/file.ext."""
    found: list[str] = []
    for quoted in re.findall(r"`([^`]+)`", requirement):
        if re.search(r"[/.]", quoted) and " " not in quoted.strip():
            found.append(quoted.strip())
    for token in re.findall(r"(?<![\w/])((?:[\w-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4})\b", requirement):
        found.append(token)
    return list(dict.fromkeys(p.strip("./") if p.startswith("./") else p for p in found))


def _requirement_terms(requirement: str) -> list[str]:
    """Texts the requirement quotes ("accuracy", 'loss'), which the named file must contain."""
    return [a or b for a, b in re.findall(r"\"([^\"]{2,60})\"|'([^']{2,60})'", requirement)]


def _keywords(requirement: str) -> list[str]:
    words = [w for w in _words(requirement) if len(w) > 3 and w not in _AGENT_STOP]
    return sorted(dict.fromkeys(words), key=lambda w: (-len(w), words.index(w)))[:3]


class ScriptedAgentJudge:
    """Deterministic judge for the agent prompt, reading the conversation to know what it has done.

    - The requirement names a file: read it. Missing: not met. Binary: met (it exists). A runnable file the
      requirement says runs or prints: run it, met on exit code 0. Quoted terms: met on the line holding
      the first one, not met when none is there. Otherwise met on its first line.
    - No file named: search the trace and workspace for the requirement's words (up to three), read the
      trace step found, and cite it; no match anywhere is not met, citing the searches.
    """

    def __init__(self, note: str = SCRIPTED_NOTE):
        self.note = note

    def __call__(self, request: FakeRequest) -> Response:
        requirement = _between(request.prompt, "<requirement>", "</requirement>") or ""
        history = self._history(request)
        tools = request.tool_names
        paths = _requirement_paths(requirement)
        if paths:
            action = self._about_file(paths[0], requirement, history, tools)
        else:
            action = self._about_trace(requirement, history, tools)
        if isinstance(action, tuple):
            return completion(request, None, tool_calls=make_tool_calls([action]))
        return completion(request, json.dumps(action))

    @staticmethod
    def _history(request: FakeRequest) -> list[tuple[str, dict, str]]:
        """(tool, arguments, result) of every tool call so far, in order."""
        results = {m.get("tool_call_id"): str(m.get("content") or "") for m in request.messages if m.get("role") == "tool"}
        history = []
        for message in request.messages:
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = {}
                history.append((function.get("name", ""), arguments, results.get(call.get("id"), "")))
        return history

    def _verdict(self, verdict: str, evidence: str) -> dict:
        return {"verdict": verdict, "evidence": f"{evidence} {self.note}"}

    def _about_file(self, path: str, requirement: str, history, tools):
        reads = [h for h in history if h[0] == "read_file" and h[1].get("path") == path]
        runs = [h for h in history if h[0] == "run_file" and h[1].get("path") == path]
        if not reads:
            return ("read_file", {"path": path})
        shown = reads[-1][2]
        if shown.startswith("error:"):
            return self._verdict("not_met", f"{path} is missing: read_file answered \"{shown[len('error: '):].strip()}\".")
        if "binary file" in shown.splitlines()[0]:
            return self._verdict("met", f"{path} exists: {shown.splitlines()[0].strip()}.")
        lines = re.findall(r"^\s*(\d+)\| ?(.*)$", shown, re.M)
        wants_run = _RUN_WORDS.search(requirement) and path.endswith((".py", ".sh"))
        if wants_run and "run_file" in tools:
            if not runs:
                return ("run_file", {"path": path})
            output = runs[-1][2]
            command = output.splitlines()[0].lstrip("$ ").strip() if output.startswith("$") else f"run {path}"
            body = output.split("---\n", 1)[-1].strip().splitlines()
            first = next((line.strip() for line in body if line.strip() and line.strip() != "(no output)"), "")
            exit_match = re.search(r"^exit code (-?\d+)", output, re.M)
            said = f" and printed {_quoted(first[:100])}" if first else ""
            if exit_match and exit_match.group(1) == "0":
                return self._verdict("met", f"ran `{command}`: exit code 0{said}.")
            status = f"exit code {exit_match.group(1)}" if exit_match else "it was killed at the time limit"
            last = next((line.strip() for line in reversed(body) if line.strip()), "")
            return self._verdict("not_met", f"ran `{command}`: {status}; its last output line: {_quoted(last[:100])}.")
        terms = [t for t in _requirement_terms(requirement) if t != path]
        if terms and lines:
            for number, text in lines:
                if any(t.lower() in text.lower() for t in terms):
                    return self._verdict("met", f"{path}:{number} reads {_quoted(text.strip()[:120])}.")
            return self._verdict(
                "not_met",
                f"{path}:{lines[0][0]}-{lines[-1][0]} (the lines read) never mention {', '.join(repr(t) for t in terms)}.",
            )
        if not lines:
            return self._verdict("not_met", f"{path} is empty: read_file answered \"{shown.strip()}\".")
        number, text = lines[0]
        return self._verdict("met", f"{path}:{number} exists and starts with {_quoted(text.strip()[:120])}.")

    def _about_trace(self, requirement: str, history, tools):
        searches = [h for h in history if h[0] == "search"]
        for _name, arguments, result in searches:
            step = re.search(r"^trace step (-?\d+):", result, re.M)
            if step:
                steps = [h for h in history if h[0] == "read_trace_step"]
                if not steps and "read_trace_step" in tools:
                    return ("read_trace_step", {"step": int(step.group(1))})
                return self._verdict("met", f"trace step {step.group(1)} shows it (search for \"{arguments['query']}\").")
            hit = re.search(r"^([^\s:]+):(\d+): (.*)$", result, re.M)
            if hit:
                return self._verdict("met", f"{hit.group(1)}:{hit.group(2)} reads {_quoted(hit.group(3).strip()[:120])}.")
        keywords = _keywords(requirement)
        if len(searches) < len(keywords):
            return ("search", {"query": keywords[len(searches)], "where": "all"})
        if not searches:
            return self._verdict("not_met", "the requirement names nothing to look for in the workspace or the trace.")
        queried = ", ".join(f"\"{h[1]['query']}\"" for h in searches)
        return self._verdict("not_met", f"searches for {queried} in the workspace and the trace found no match.")


_BLIND_DOMAIN = [
    (
        r"\b(code|function|script|python|program|sql|query)\b", "runs_as_written",
        "The code would run as written, with no missing pieces.",
    ),
    (r"\b(summar\w*|notes|digest|recap)\b", "faithfulness", "Everything stated is supported by the source; nothing is invented."),
    (
        r"\b(steps?|guide|how to|instructions?|runbook|checklist)\b", "actionability",
        "A reader can follow it step by step without guessing.",
    ),
    (r"\b(email|reply|customer|letter|message)\b", "tone", "The tone suits the reader: clear, polite and calm."),
]
_BLIND_FAILURE = re.compile(r"^\s*(error|fatal|traceback|exception|aborted|run failed|failed|timeout|timed out)\b", re.I | re.M)


# Words that say what an expectation checks, not what the output must contain.
_EXPECTATION_VERBS = set(
    "lists list says names explains mentions includes describes gives shows covers contains states uses order "
    "output answer clear clearly each every least cover covers write after".split()
)


def _task_words(text: str) -> dict[str, str]:
    """Content words by their first six letters (so that `refunds` meets `refund`), each with the word."""
    words: dict[str, str] = {}
    for w in _words(text):
        if len(w) > 3 and w not in _STOP and w not in _EXPECTATION_VERBS:
            words.setdefault(w[:6], w)
    return words


def _tagged(prompt: str, tag: str) -> list[tuple[str, str]]:
    return re.findall(rf'<{tag} (?:id|name)="([^"]+)">(.*?)</{tag}>', prompt, re.S)


class _BlindOutput:
    """What the demo judge measures in one run's output, relative to the task."""

    def __init__(self, output: str, task: str):
        body = re.sub(r"</?file[^>]*>", "", output)
        words = _words(body)
        self.stems = {w[:6] for w in words}
        self.failed = not words or "(this run produced no files)" in output or bool(_BLIND_FAILURE.search(body[:400]))
        wanted = _task_words(task)
        self.coverage = len(wanted.keys() & self.stems) / len(wanted) if wanted else 0.5
        self.missing = [word for stem, word in wanted.items() if stem not in self.stems][:4]
        self.structure = min(1.0, len(re.findall(r"^\s*(#+ |[-*] |\d+[.)] )", body, re.M)) / 8)
        self.substance = min(1.0, len(set(words)) / 120)
        self.concrete = min(1.0, len(re.findall(r"\d+|`[^`]+`", body)) / 6)
