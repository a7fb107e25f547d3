"""response_match_score: ROUGE-1 F-measure of the final response against the reference.

Scored as ADK 2.x scores it, with rouge-score's ROUGE-1 and the tokenization ADK uses, so
scores equal ADK's: NFKC + lowercase; CJK ideographs, kana and Hangul syllables are one
token each; Thai, Lao, Khmer and Myanmar split into grapheme clusters; other letters, digits
and combining marks are kept, everything else separates words; ASCII words go through
rouge-score's tokenizer (NLTK's Porter stemming for tokens longer than 3 characters);
non-ASCII words stay whole. ROUGE-1 is rouge-score's formula (``_score_ngrams`` for
unigrams, ``scoring.fmeasure``), computed here: its scorer module imports numpy, absl and
all of NLTK (machinery/porter.py) for nothing ROUGE-1 needs.

Known ADK behaviour kept for score equality: an empty reference and an empty response score 0.0.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache

from ..models.evalset import content_text
from .base import Criterion, InvocationScore, Metric, RunInput, RunScore, ScoringContext, mean
from .base import pair_invocations, reference_problem

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
_CLUSTER_SCRIPT_RANGES = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF), (0x1000, 0x109F))


def _in(ranges: tuple[tuple[int, int], ...], char: str) -> bool:
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in ranges)


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


class _CharMap(dict):
    """What each character becomes before splitting on whitespace, for ``str.translate``.

    The rule depends on the character alone, so it is computed once per distinct character:
    a CJK character becomes its own word, a Thai/Lao/Khmer/Myanmar base character starts a
    new word (its combining marks stay attached), other letters, digits and marks are kept,
    anything else separates words.
    """

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if _in(_CJK_RANGES, char):
            out = f" {char} "
        elif _in(_CLUSTER_SCRIPT_RANGES, char):
            out = char if _is_mark(char) else f" {char}"
        elif char.isalnum() or _is_mark(char):
            out = char
        else:
            out = " "
        if len(self) < 200_000:  # bounded, whatever text comes in
            self[code] = out
        return out


_CHAR_MAP = _CharMap()


class UnicodeTokenizer:
    """rouge-score tokenizer interface (``tokenize(text) -> list[str]``)."""

    def __init__(self) -> None:
        from rouge_score import tokenize  # the standard library and six only

        from .machinery.porter import porter_stemmer

        stemmer = porter_stemmer()  # as tokenizers.DefaultTokenizer(use_stemmer=True)

        # Stemming is the slow part, and words repeat: tokenize each ASCII word once.
        @lru_cache(maxsize=1 << 16)
        def ascii_tokens(word: str) -> tuple[str, ...]:
            return tuple(tokenize.tokenize(word, stemmer))

        self._ascii_tokens = ascii_tokens

    def tokenize(self, text: str) -> list[str]:
        words = unicodedata.normalize("NFKC", text).lower().translate(_CHAR_MAP).split()
        tokens: list[str] = []
        for word in words:
            if word.isascii():
                tokens.extend(self._ascii_tokens(word))
            else:
                tokens.append(word)
        return tokens


@cache
def _tokenizer() -> UnicodeTokenizer:
    # Holds no per-call state; building it (and its stemmer) once is just speed.
    return UnicodeTokenizer()


@dataclass(frozen=True)
class Rouge1:
    precision: float
    recall: float
    fmeasure: float


def _score(candidate: str, reference: str) -> Rouge1:
    """rouge-score's ``RougeScorer(["rouge1"]).score(reference, candidate)["rouge1"]``:
    unigram counts, their overlap, precision, recall and F-measure, in its order of operations."""
    tokenizer = _tokenizer()
    target = Counter(tokenizer.tokenize(reference))
    prediction = Counter(tokenizer.tokenize(candidate))
    overlap = 0
    for token in target:
        overlap += min(target[token], prediction[token])
    precision = overlap / max(sum(prediction.values()), 1)
    recall = overlap / max(sum(target.values()), 1)
    fmeasure = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return Rouge1(precision, recall, fmeasure)


def rouge1(candidate: str, reference: str) -> Rouge1:
    """ROUGE-1 precision/recall/fmeasure of ``candidate`` against ``reference``."""
    if len(candidate) + len(reference) <= REMEMBERED_CHARS:
        return _remembered(candidate, reference)
    return _score(candidate, reference)


# The runs of a case often give the same answer (a deterministic agent, a step the agent
# does not vary): such a pair is scored once. Only short texts, so that the cache is small.
REMEMBERED_CHARS = 4096


@lru_cache(maxsize=256)
def _remembered(candidate: str, reference: str) -> Rouge1:
    return _score(candidate, reference)


class ResponseMatchScore(Metric):
    name = "response_match_score"
    description = "ROUGE-1 F-measure of the final response against the reference response."
    criterion_model = Criterion

    def score(self, criterion: Criterion, run: RunInput, context: ScoringContext) -> RunScore:
        problem = reference_problem(run)
        if problem:
            return problem
        per_invocation = []
        for actual, expected in pair_invocations(run):
            reference = content_text(expected.final_response)
            response = content_text(actual.final_response)
            result = rouge1(response, reference)
            per_invocation.append(InvocationScore(score=result.fmeasure, details={
                "expected": reference, "actual": response,
                "precision": result.precision, "recall": result.recall}))
        return RunScore(score=mean([i.score for i in per_invocation if i.score is not None]),
                        invocations=per_invocation)
