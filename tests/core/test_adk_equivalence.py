"""Our deterministic metrics score exactly what google-adk 2.13's own evaluators score.

Every example is one JSON document (a list of actual/expected invocation pairs), loaded
into ADK's pydantic ``Invocation`` (``model_validate_json``, as ADK reads files) and into
ours (our JSON reader + ``Invocation.model_validate``, as our loader reads files). Both
evaluators then score the same data.

Comparison: per-invocation scores and efficiency details with ``==``. Case scores with
``==`` too, except the ROUGE case mean on Python >= 3.12: ADK sums in a ``+=`` loop, we use
``sum()``, which became compensated (Neumaier) summation in 3.12, so the last bit may differ
there; on those versions the check is ``math.isclose(rel_tol=1e-12)``. Trajectory means
are sums of 0.0/1.0 and are exact on every version.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from google.adk.evaluation._efficiency_evaluators import (
    _InferenceCallCountV1Evaluator,
    _InvocationDurationV1Evaluator,
    _TokenUsageV1Evaluator,
    _ToolCallCountV1Evaluator,
)
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.evaluator import EvalStatus
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator, _UnicodeAwareTokenizer
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

from checker.metrics import get_metric
from checker.metrics.base import RunInput, ScoringContext
from checker.metrics.response_match_score import UnicodeTokenizer
from checker.metrics.tool_trajectory_avg_score import TrajectoryCriterion
from checker.models.evalset import EvalCase, Invocation
from checker.inputs.validation import parse_json_text
from corehelpers import camelize

SETTINGS = settings(max_examples=200, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
COMPENSATED_SUM = sys.version_info >= (3, 12)

# ------------------------------------------------------------------ strategies

# Values chosen so that Python equality makes distinct JSON spellings collide (1, 1.0, true)
# and near-misses stay distinct ("1", null vs {}, list order).
SCALARS = [1, 1.0, True, "1", 0, 0.0, False, None, "a", "A", "é", 2.5, -3, ""]
value = st.recursive(
    st.sampled_from(SCALARS),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["x", "y", "max_results"]), inner, max_size=2),
    max_leaves=5)
MISSING = object()
arg_dicts = st.dictionaries(st.sampled_from(["city", "q", "max_results"]), value, max_size=3)
args = st.one_of(st.just(MISSING), st.none(), st.just({}), arg_dicts)
names = st.sampled_from(["get_weather", "search", "f"])  # few names: repeats are common


@st.composite
def calls(draw) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draw(names)}
    a = draw(args)
    if a is not MISSING:
        out["args"] = a
    if draw(st.booleans()):
        out["id"] = draw(st.sampled_from(["c1", "c2", "adk-123"]))
    return out


EQUAL_SPELLINGS = {1: [1.0, True], 1.0: [1, True], 0: [0.0, False], True: [1, 1.0],
                   False: [0, 0.0]}


def respell(value: Any, rnd: Any) -> Any:
    """The same value under Python equality, spelt differently (1 -> 1.0 -> true)."""
    if isinstance(value, dict):
        return {k: respell(v, rnd) for k, v in value.items()}
    if isinstance(value, list):
        return [respell(v, rnd) for v in value]
    for key, options in EQUAL_SPELLINGS.items():
        if type(value) is type(key) and value == key:
            return rnd.choice([value, *options])
    return value


@st.composite
def trajectory_pairs(draw) -> tuple[list[dict], list[dict]]:
    expected = draw(st.lists(calls(), max_size=6))
    how = draw(st.sampled_from(["independent", "same", "permuted", "superset", "subset",
                                "respelt", "dropped_args"]))
    rnd = draw(st.randoms(use_true_random=False))
    actual = copy.deepcopy(expected)
    if how == "independent":
        actual = draw(st.lists(calls(), max_size=6))
    elif how == "permuted":
        actual = draw(st.permutations(actual))
    elif how == "superset":
        for extra in draw(st.lists(calls(), min_size=1, max_size=4)):
            actual.insert(rnd.randint(0, len(actual)), extra)
    elif how == "subset" and actual:
        del actual[rnd.randrange(len(actual))]
    elif how == "respelt":
        actual = [dict(c, args=respell(c["args"], rnd)) if "args" in c else c for c in actual]
    elif how == "dropped_args" and actual:
        victim = actual[rnd.randrange(len(actual))]
        victim["args"] = draw(st.sampled_from([None, {}, MISSING]))
        if victim["args"] is MISSING:
            del victim["args"]
    return actual, expected


WORDS = ["the", "cats", "are", "running", "cat", "runs", "Running", "Paris", "sunny", "21",
         "degrees", "Celsius", "it's", "e-mail", "x²", "café", "cafe\u0301", "naïve", "Ärger",
         "東京", "天気は晴れ", "ひらがな", "カタカナ", "한국어", "ภาษาไทย", "สวัสดีครับ", "กิ่ง",
         "ລາວ", "ខ្មែរ", "မြန်မာ", "مرحبا", "بالعالم", "שלום", "Привет", "😀", "👍🏽",
         "🇫🇷", "ｆｕｌｌｗｉｄｔｈ", "ﬁne", "Ⅻ", "١٢٣", "...", "—", "\n", "\t"]
ALPHABET = "abc AEé\u0301東京晴ภาษไท\u0e34\u0e48\u0e31مرحب😀👍\U0001F3FD-.,'1２\n"
texts = st.one_of(st.just(""), st.lists(st.sampled_from(WORDS), max_size=14).map(" ".join),
                  st.text(alphabet=ALPHABET, max_size=40))


@st.composite
def contents(draw) -> dict[str, Any] | None:
    kind = draw(st.sampled_from(["none", "one", "one", "several", "no_parts", "non_text"]))
    if kind == "none":
        return None
    if kind == "no_parts":
        return {"role": "model", "parts": []}
    if kind == "non_text":
        return {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}}}]}
    if kind == "one":
        return {"role": "model", "parts": [{"text": draw(texts)}]}
    parts = []
    for _ in range(draw(st.integers(2, 3))):
        part: dict[str, Any] = {"text": draw(texts)}
        if draw(st.booleans()):
            part["thought"] = True
        parts.append(part)
    return {"role": "model", "parts": parts}


USAGE_FIELDS = ["prompt_token_count", "candidates_token_count", "thoughts_token_count",
                "tool_use_prompt_token_count", "cached_content_token_count", "total_token_count"]
usage = st.dictionaries(st.sampled_from(USAGE_FIELDS), st.integers(0, 5000), max_size=6)


@st.composite
def intermediate(draw, tool_calls: list[dict]) -> Any:
    """One of ADK's two intermediate_data shapes holding ``tool_calls``; MISSING for none."""
    shapes = ["tool_uses", "events"] + (["absent", "null", "empty"] if not tool_calls else [])
    shape = draw(st.sampled_from(shapes))
    if shape == "absent":
        return MISSING
    if shape == "null":
        return None
    if shape == "empty":
        return {}
    if shape == "tool_uses":
        out: dict[str, Any] = {"tool_uses": tool_calls}
        if draw(st.booleans()):
            out["tool_responses"] = [{"name": c["name"], "response": {"ok": True}} for c in tool_calls]
        if draw(st.booleans()):
            out["intermediate_responses"] = [["sub_agent", [{"text": draw(texts)}]]]
        return out
    events: list[dict[str, Any]] = []
    remaining = list(tool_calls)
    while remaining or draw(st.booleans()):
        event: dict[str, Any] = {"author": draw(st.sampled_from(["root", "sub_agent", "user"]))}
        kind = draw(st.sampled_from(["calls", "calls", "response", "text", "bare"]))
        if kind == "calls" and remaining:
            k = draw(st.integers(1, len(remaining)))
            event["content"] = {"role": "model",
                                "parts": [{"function_call": c} for c in remaining[:k]]}
            remaining = remaining[k:]
        elif kind == "response":
            event["content"] = {"role": "user", "parts": [
                {"function_response": {"name": "f", "response": {"result": 1}}}]}
        elif kind == "text":
            event["content"] = {"role": "model", "parts": [{"text": draw(texts)}]}
        if draw(st.booleans()):
            event["usage_metadata"] = draw(usage)
        if draw(st.booleans()):
            event["model_version"] = "gemini-2.5-flash"
        events.append(event)
        if len(events) > 8 and not remaining:
            break
    return {"invocation_events": events}


durations = st.one_of(st.none(), st.floats(0, 60, allow_nan=False, allow_infinity=False))


@st.composite
def invocation_json(draw, tool_calls: list[dict]) -> dict[str, Any]:
    inv: dict[str, Any] = {"invocation_id": "inv",
                           "user_content": {"role": "user", "parts": [{"text": draw(texts)}]}}
    final = draw(contents())
    if final is not None or draw(st.booleans()):
        inv["final_response"] = final
    data = draw(intermediate(tool_calls))
    if data is not MISSING:
        inv["intermediate_data"] = data
    for key in ("duration", "model_duration", "tool_duration"):
        d = draw(durations)
        if d is not None:
            inv[key] = d
    return inv


@st.composite
def cases(draw) -> tuple[list[dict], list[dict]]:
    """(actual invocations, expected invocations) JSON, 0-4 turns, random key spelling."""
    actual, expected = [], []
    for _ in range(draw(st.integers(0, 4))):
        a_calls, e_calls = draw(trajectory_pairs())
        actual.append(draw(invocation_json(a_calls)))
        expected.append(draw(invocation_json(e_calls)))
    if draw(st.booleans()):
        actual = camelize(actual)
    if draw(st.booleans()):
        expected = camelize(expected)
    return actual, expected


# ------------------------------------------------------------------ loading both ways


def load_adk(invocations: list[dict]) -> list[AdkInvocation]:
    return [AdkInvocation.model_validate_json(json.dumps(i)) for i in invocations]


def load_ours(invocations: list[dict]) -> list[Invocation]:
    data = parse_json_text(json.dumps(invocations), "test.json")
    return [Invocation.model_validate(i) for i in data]


def run_ours(metric_name: str, criterion: Any, actual: list[dict], expected: list[dict] | None):
    exp = load_ours(expected) if expected is not None else None
    run = RunInput(case=EvalCase(eval_id="c", conversation=exp or []), actual=load_ours(actual),
                   expected=exp, scenario=None)
    return get_metric(metric_name)().score(criterion, run, ScoringContext())


def assert_case_mean(ours: float | None, adk: float | None, exact: bool) -> None:
    if exact or ours is None or adk is None:
        assert ours == adk
    else:
        assert math.isclose(ours, adk, rel_tol=1e-12), (ours, adk)


# ------------------------------------------------------------------ tool_trajectory_avg_score

MATCH_TYPES = ["EXACT", "IN_ORDER", "ANY_ORDER"]


def check_trajectory(actual: list[dict], expected: list[dict], match_type: str,
                     ignore_args: bool, threshold: float) -> None:
    adk = TrajectoryEvaluator(eval_metric=EvalMetric(
        metric_name="tool_trajectory_avg_score", threshold=threshold,
        criterion=ToolTrajectoryCriterion(threshold=threshold, match_type=match_type,
                                          ignore_args=ignore_args)),
    ).evaluate_invocations(load_adk(actual), load_adk(expected))
    criterion = TrajectoryCriterion(threshold=threshold, match_type=match_type,
                                    ignore_args=ignore_args)
    ours = run_ours("tool_trajectory_avg_score", criterion, actual, expected)
    assert [i.score for i in ours.invocations] == [r.score for r in adk.per_invocation_results]
    assert ours.score == adk.overall_score  # means of 0.0/1.0: exact on every Python
    if adk.overall_score is not None:
        assert (ours.score >= threshold) == (adk.overall_eval_status == EvalStatus.PASSED)


@SETTINGS
@given(case=cases(), match_type=st.sampled_from(MATCH_TYPES), ignore_args=st.booleans(),
       threshold=st.sampled_from([0.0, 0.5, 1.0]))
def test_trajectory_equals_adk(case, match_type, ignore_args, threshold):
    actual, expected = case
    check_trajectory(actual, expected, match_type, ignore_args, threshold)


def _one(tools_actual: list[dict], tools_expected: list[dict]) -> tuple[list[dict], list[dict]]:
    inv = lambda tools: {"user_content": {"parts": [{"text": "q"}]},  # noqa: E731
                         "intermediate_data": {"tool_uses": tools}}
    return [inv(tools_actual)], [inv(tools_expected)]


# Hand-picked cases with their known scores (reference section 3.1), checked against ADK too.
KNOWN = [
    # (actual calls, expected calls, {match_type: score})
    ([{"name": "a", "args": {"x": 1}}, {"name": "b", "args": {}}, {"name": "c", "args": {"y": [1, 2]}}],
     [{"name": "a", "args": {"x": 1.0}}, {"name": "c", "args": {"y": [1, 2]}}],
     {"EXACT": 0.0, "IN_ORDER": 1.0, "ANY_ORDER": 1.0}),
    ([], [], {"EXACT": 1.0, "IN_ORDER": 1.0, "ANY_ORDER": 1.0}),
    ([{"name": "a"}], [], {"EXACT": 0.0, "IN_ORDER": 1.0, "ANY_ORDER": 1.0}),
    ([], [{"name": "a"}], {"EXACT": 0.0, "IN_ORDER": 0.0, "ANY_ORDER": 0.0}),
    ([{"name": "a", "args": {"n": True}}], [{"name": "a", "args": {"n": 1}}],
     {"EXACT": 1.0, "IN_ORDER": 1.0, "ANY_ORDER": 1.0}),
    ([{"name": "a", "args": {"n": "1"}}], [{"name": "a", "args": {"n": 1}}],
     {"EXACT": 0.0, "IN_ORDER": 0.0, "ANY_ORDER": 0.0}),
    ([{"name": "a", "args": None}], [{"name": "a", "args": {}}],
     {"EXACT": 0.0, "IN_ORDER": 0.0, "ANY_ORDER": 0.0}),
    ([{"name": "a"}], [{"name": "a", "args": None}], {"EXACT": 1.0, "IN_ORDER": 1.0, "ANY_ORDER": 1.0}),
    ([{"name": "a", "args": {"o": {"k": [1, {"z": 2.0}]}}}], [{"name": "a", "args": {"o": {"k": [1, {"z": 2}]}}}],
     {"EXACT": 1.0, "IN_ORDER": 1.0, "ANY_ORDER": 1.0}),
    ([{"name": "a", "args": {"l": [2, 1]}}], [{"name": "a", "args": {"l": [1, 2]}}],
     {"EXACT": 0.0, "IN_ORDER": 0.0, "ANY_ORDER": 0.0}),
    # Repeated calls: ANY_ORDER is multiset inclusion, IN_ORDER a subsequence.
    ([{"name": "a"}, {"name": "b"}], [{"name": "a"}, {"name": "a"}],
     {"EXACT": 0.0, "IN_ORDER": 0.0, "ANY_ORDER": 0.0}),
    ([{"name": "b"}, {"name": "a"}, {"name": "a"}], [{"name": "a"}, {"name": "b"}],
     {"EXACT": 0.0, "IN_ORDER": 0.0, "ANY_ORDER": 1.0}),
]


@pytest.mark.parametrize("actual_calls,expected_calls,scores", KNOWN)
@pytest.mark.parametrize("match_type", MATCH_TYPES)
def test_trajectory_known_cases(actual_calls, expected_calls, scores, match_type):
    actual, expected = _one(actual_calls, expected_calls)
    check_trajectory(actual, expected, match_type, False, 1.0)
    criterion = TrajectoryCriterion(threshold=1.0, match_type=match_type)
    assert run_ours("tool_trajectory_avg_score", criterion, actual, expected).score == scores[match_type]


def test_trajectory_ignore_args_compares_names_only():
    actual, expected = _one([{"name": "a", "args": {"x": 1}}, {"name": "b", "args": None}],
                            [{"name": "a", "args": {"x": 2}}, {"name": "b", "args": {}}])
    for match_type in MATCH_TYPES:
        check_trajectory(actual, expected, match_type, True, 1.0)
        criterion = TrajectoryCriterion(threshold=1.0, match_type=match_type, ignore_args=True)
        assert run_ours("tool_trajectory_avg_score", criterion, actual, expected).score == 1.0


def test_trajectory_multi_invocation_mean():
    a1, e1 = _one([{"name": "a"}], [{"name": "a"}])
    a2, e2 = _one([{"name": "b"}], [{"name": "a"}])
    a3, e3 = _one([], [])
    actual, expected = a1 + a2 + a3, e1 + e2 + e3
    check_trajectory(actual, expected, "EXACT", False, 0.5)
    ours = run_ours("tool_trajectory_avg_score", TrajectoryCriterion(threshold=0.5), actual, expected)
    assert [i.score for i in ours.invocations] == [1.0, 0.0, 1.0]
    assert ours.score == 2 / 3


# ------------------------------------------------------------------ response_match_score


def check_rouge(actual: list[dict], expected: list[dict]) -> None:
    adk = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8)
                         ).evaluate_invocations(load_adk(actual), load_adk(expected))
    ours = run_ours("response_match_score", TrajectoryCriterion(threshold=0.8), actual, expected)
    assert [i.score for i in ours.invocations] == [r.score for r in adk.per_invocation_results]
    assert_case_mean(ours.score, adk.overall_score, exact=not COMPENSATED_SUM)


@SETTINGS
@given(case=cases())
def test_rouge_equals_adk(case):
    check_rouge(*case)


def _responses(actual: str | None, expected: str | None) -> tuple[list[dict], list[dict]]:
    inv = lambda text: {"user_content": {"parts": [{"text": "q"}]},  # noqa: E731
                        **({"final_response": {"parts": [{"text": text}]}} if text is not None else {})}
    return [inv(actual)], [inv(expected)]


@pytest.mark.parametrize("actual,expected,score", [
    ("The cats are running", "the cat runs", 2 * 0.75 * 1.0 / 1.75),
    ("", "", 0.0),  # ADK's behaviour (reference 8.3): empty vs empty is 0.0; kept for equality
    (None, None, 0.0),
    ("東京の天気は晴れ", "東京は晴れ", None),
    ("สวัสดีครับ", "สวัสดีค่ะ", None),
    ("مرحبا بالعالم", "مرحبا", None),
    ("Café naïve", "cafe\u0301 naive", None),
    ("😀 👍🏽 ok", "ok 😀", None),
    ("ｆｕｌｌｗｉｄｔｈ ﬁne", "fullwidth fine", 1.0),
    ("Mixed 東京 café สวัสดี 😀 running", "mixed 東京 runs", None),
])
def test_rouge_unicode_examples(actual, expected, score):
    act, exp = _responses(actual, expected)
    check_rouge(act, exp)
    if score is not None:
        ours = run_ours("response_match_score", TrajectoryCriterion(threshold=0.8), act, exp)
        assert ours.score == score


def test_rouge_of_pairs_scored_again_equals_adk():
    """A pair of short texts scored again comes from a small cache, keyed by both texts;
    long ones are scored each time."""
    for actual, expected in [("Sunny in Paris", "sunny in Paris"), ("Sunny in Paris", "rain in Oslo"),
                             ("rain in Oslo", "Sunny in Paris"), ("Sunny in Paris", "rain in Oslo"),
                             ("word " * 600, "word " * 500 + "other"), ("word " * 600, "word")]:
        check_rouge(*_responses(actual, expected))


@SETTINGS
@given(text=st.text(max_size=60) | texts)
def test_tokenizer_equals_adk_on_any_unicode(text):
    assert UnicodeTokenizer().tokenize(text) == _UnicodeAwareTokenizer(use_stemmer=True).tokenize(text)


def test_tokenizer_equals_adk_on_every_character():
    """Every character of the BMP (lone surrogates included) and every 16th one above it."""
    ours, adk = UnicodeTokenizer(), _UnicodeAwareTokenizer(use_stemmer=True)
    codes = [*range(0x10000), *range(0x10000, 0x110000, 16), *range(0xE0100, 0xE01F0)]
    for start in range(0, len(codes), 8192):
        text = " ".join(chr(c) for c in codes[start:start + 8192])
        assert ours.tokenize(text) == adk.tokenize(text), hex(codes[start])


# The stemmer as a scoring run loads it: alone, before anything imported NLTK (machinery/
# porter.py); then ADK's tokenizer, which imports all of NLTK the ordinary way, in the same
# process. Words: each stem of the Porter paper's examples with each suffix its steps strip.
STEMS_ALONE = r"""
import itertools, json, sys
from checker.metrics.response_match_score import UnicodeTokenizer, rouge1
ours = UnicodeTokenizer()
alone = not any(n == "nltk" or n.startswith("nltk.") for n in sys.modules)
bases = ["cat", "pony", "caress", "agree", "plaster", "motor", "hop", "tan", "fall", "hiss",
         "fizz", "fail", "file", "happ", "relat", "condition", "ration", "valen", "hesit",
         "digit", "conform", "radic", "differ", "vile", "analog", "vietnam", "predic", "oper",
         "feud", "decis", "hope", "sens", "formal", "sensit", "triplic", "electr", "generaliz",
         "oscill", "die", "lie", "sky", "news", "innings", "howe", "atlas", "cosmos", "bias",
         "andes", "proceed", "exceed", "succeed", "gener", "arsen", "commun", "univers", "a1b2"]
suffixes = ["", "s", "es", "ies", "ss", "ed", "ing", "y", "ational", "tional", "enci", "anci",
            "izer", "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism",
            "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "logi", "icate", "ative",
            "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able",
            "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive",
            "ize", "e", "ll", "ly", "edly", "ingly", "fully", "lessly"]
words = [b + s for b, s in itertools.product(bases, suffixes)]
text = " ".join(words)
from google.adk.evaluation.final_response_match_v1 import _UnicodeAwareTokenizer
adk = _UnicodeAwareTokenizer(use_stemmer=True)
from rouge_score import rouge_scorer
scorer = rouge_scorer.RougeScorer(["rouge1"], tokenizer=adk)
pairs = [(" ".join(words[i:i + 7]), " ".join(words[i + 3:i + 9])) for i in range(0, len(words), 5)]
print(json.dumps({"alone": alone, "words": len(words), "equal": ours.tokenize(text) == adk.tokenize(text),
                  "rouge": all(tuple(rouge1(a, b).__dict__.values()) == tuple(scorer.score(b, a)["rouge1"])
                               for a, b in pairs)}))
"""


def test_the_stemmer_loaded_without_the_rest_of_nltk_stems_as_nltk_and_adk():
    import subprocess

    done = subprocess.run([sys.executable, "-c", STEMS_ALONE], capture_output=True, text=True,
                          timeout=120, cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"alone": True, "words": 3472, "equal": True, "rouge": True}


# ------------------------------------------------------------------ efficiency metrics

EFFICIENCY = {
    "tool_call_count_v1": _ToolCallCountV1Evaluator,
    "inference_call_count_v1": _InferenceCallCountV1Evaluator,
    "token_usage_v1": _TokenUsageV1Evaluator,
    "invocation_duration_v1": _InvocationDurationV1Evaluator,
}


def check_efficiency(name: str, actual: list[dict]) -> None:
    adk = EFFICIENCY[name]().evaluate_invocations(load_adk(actual))
    ours = run_ours(name, None, actual, None)
    assert adk.overall_eval_status == EvalStatus.INFORMATIONAL
    assert [i.score for i in ours.invocations] == [r.score for r in adk.per_invocation_results]
    assert ours.score == adk.overall_score
    if name == "token_usage_v1":
        assert [i.details for i in ours.invocations] == [
            r.token_usage_details.model_dump() for r in adk.per_invocation_results]
        if actual:
            assert ours.details == adk.overall_token_usage_details.model_dump()
    if name == "invocation_duration_v1":
        assert [i.details for i in ours.invocations] == [
            r.duration_details.model_dump() for r in adk.per_invocation_results]
        if actual:
            assert ours.details == adk.overall_duration_details.model_dump()


@SETTINGS
@given(case=cases(), name=st.sampled_from(sorted(EFFICIENCY)))
def test_efficiency_equals_adk(case, name):
    actual, _ = case
    check_efficiency(name, actual)


@pytest.mark.parametrize("name", sorted(EFFICIENCY))
def test_efficiency_known_values(name):
    events = {"invocation_events": [
        {"author": "root", "usage_metadata": {"prompt_token_count": 100, "candidates_token_count": 7},
         "content": {"parts": [{"function_call": {"name": "f", "args": {}}}]}},
        {"author": "root", "model_version": "m", "usageMetadata": {"promptTokenCount": 50,
                                                                   "thoughtsTokenCount": 3}},
        {"author": "tool", "content": {"parts": [{"function_response": {"name": "f", "response": {}}}]}},
    ]}
    actual = [
        {"user_content": {"parts": [{"text": "q"}]}, "intermediate_data": events,
         "duration": 2.5, "model_duration": 1.25, "tool_duration": 0.5},
        {"user_content": {"parts": [{"text": "q"}]},
         "intermediate_data": {"tool_uses": [{"name": "f"}, {"name": "g"}, {"name": "f"}]}},
    ]
    check_efficiency(name, actual)
    ours = run_ours(name, None, actual, None)
    expected = {
        "tool_call_count_v1": ([1.0, 3.0], 2.0),
        "inference_call_count_v1": ([2.0, None], 2.0),
        "token_usage_v1": ([160, None], 80.0),  # averaged over all invocations, as ADK does
        "invocation_duration_v1": ([2.5, None], 2.5),
    }[name]
    assert ([i.score for i in ours.invocations], ours.score) == expected
