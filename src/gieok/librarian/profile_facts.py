"""Stable facts about the user, from the user's own words only.

By design a message whose role is not "user" yields no facts: an assistant's guess ("The user is a Staff
Engineer") once became a profile fact in the system this project replaces (seed risk 3), and a tool's output is
nobody's statement about the user. The role rule is enforced in code for both extractors, not only in a prompt.

The offline extractor is deliberately narrow: explicit first-person statements in English and Korean ("my name
is …", "I prefer …", "제 이름은 …", "…를 선호해요"). It skips questions, hypotheticals and reports of what someone
else said or likes. Missing a fact costs little (it is said again); recording a wrong one pollutes every session.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import anyio
from pydantic import BaseModel, Field

from gieok.librarian.keyphrase import strip_particles
from gieok.providers.llm import LLM

__all__ = [
    "CORE_KEYS",
    "FACT_KEYS",
    "Fact",
    "FactExtractor",
    "LLMFactExtractor",
    "OfflineFactExtractor",
    "extract_facts",
]

FactKey = Literal["name", "job", "preference", "tool", "language", "project", "location", "other"]
FACT_KEYS: tuple[str, ...] = ("name", "job", "preference", "tool", "language", "project", "location", "other")
# The few facts that always matter (users.core_profile); everything else goes to sub_profile.
CORE_KEYS = frozenset({"name", "job", "language"})


class Fact(BaseModel, frozen=True):
    key: FactKey
    value: str
    core: bool

    @classmethod
    def of(cls, key: FactKey, value: str) -> Fact:
        return cls(key=key, value=value, core=key in CORE_KEYS)


# ---------------------------------------------------------------------------------------------- filters


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


# A sentence ends at . ! ? followed by space, or at a newline; "store.py" and "Node.js" stay whole.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?。！？])\s+|\n+")
# Korean joins statements with the copula's connective forms ("저는 개발자이고 서울에 살아요"): each clause is a
# statement of its own, and the copula ending stays with the first one so its rule still sees it.
_KO_CLAUSE_BREAK = re.compile(r"(?<=[가-힣](?:이고|이며))\s+")
_EN_QUESTION_START = re.compile(
    r"^\s*(?:do|does|did|am|is|are|was|were|can|could|would|should|will|shall|have|has|what|why|how|where|who|"
    r"when|which|whom|whose)\b", re.IGNORECASE)
_KO_QUESTION_END = re.compile(r"(?:까|니|나요|가요|냐|는지|던가)\s*$")
_HYPOTHETICAL = re.compile(
    r"\b(?:if|suppose|supposing|imagine|pretend|assuming|assume|hypothetically|as if|what if|wish|"
    r"would|were to)\b|만약|만일|가정|(?:이라|라|다|였|었)면\s|였으면|이었으면|치고", re.IGNORECASE)
# Someone else's words or tastes: "my friend says I …", "he thinks I'm …", "친구는 …", "…래요".
# A reporting verb counts only when someone other than the speaker reports ("as I said, …" is still the user).
_REPORTED = re.compile(
    r"\b(?!i\b)(?:\w+)\s+(?:says?|said|thinks?|thought|told|tells|believes?|claims?|reckons?|assumes?)\b|"
    r"\baccording to\b|"
    r"\bmy (?:friend|wife|husband|partner|boss|manager|colleague|coworker|mom|mother|dad|father|brother|sister|"
    r"son|daughter|team|teammate|client)\b|"
    r"(?:친구|동료|팀장|상사|엄마|아빠|어머니|아버지|형|누나|언니|오빠|동생|남편|아내|와이프|고객|사람들)(?:은|는|이|가|도)|"
    r"(?:래요|대요|랬어|댔어|라고\s*했|다고\s*했|라던데|다던데)", re.IGNORECASE)
_NEGATION_EN = re.compile(r"\b(?:not|never|no longer|don't|do not|didn't|dont)\b", re.IGNORECASE)


def _usable(sentence: str) -> bool:
    s = sentence.strip()
    if not s or s.endswith("?") or _EN_QUESTION_START.match(s) or _KO_QUESTION_END.search(s.rstrip(".!。")):
        return False
    return not (_HYPOTHETICAL.search(s) or _REPORTED.search(s))


# ----------------------------------------------------------------------------------------- value helpers

_STOP_AT = re.compile(
    r"\s+(?:and then|but|because|since|so|which|who|that|when|while|though|although|as well|"
    r"and i|and my|for|to|at|in|on|with|by|from|every|daily|everyday|lately|these days|nowadays|now|too|also)\b.*$",
    re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:a|an|the|my|some)\s+", re.IGNORECASE)


def _trim(value: str, max_words: int, cut: bool = True) -> str:
    v = value.strip()
    if cut:
        v = _STOP_AT.sub("", v)
    v = re.split(r"[,;:()\"“”]", v)[0]
    v = _ARTICLE.sub("", v.strip())
    words = v.split()[:max_words]
    return " ".join(words).strip(" .!'’-")


def _split_list(value: str) -> list[str]:
    # "neovim and tmux", "Korean, English and Japanese" → separate facts.
    return [p.strip() for p in re.split(r",\s*|\s+and\s+|\s+or\s+|\s*/\s*", value) if p.strip()]


_JOB_WORDS = (
    "engineer|developer|dev|programmer|designer|scientist|researcher|student|manager|teacher|professor|doctor|"
    "architect|analyst|consultant|founder|co-founder|cto|ceo|cfo|vp|pm|lead|writer|lawyer|nurse|intern|sre|"
    "admin|administrator|freelancer|contractor|director|product owner|data scientist|tester|qa|maintainer|"
    "hacker|artist|editor|journalist|entrepreneur|specialist|technician|physicist|mathematician|economist"
)
_JOB_RE = re.compile(rf"\b(?:{_JOB_WORDS})s?\b", re.IGNORECASE)
_LANGUAGES = re.compile(
    r"^(?:english|korean|japanese|chinese|mandarin|cantonese|spanish|french|german|italian|portuguese|russian|"
    r"arabic|hindi|vietnamese|thai|indonesian|dutch|swedish|polish|turkish|hebrew|greek|ukrainian)$",
    re.IGNORECASE)
_NOT_A_NAME = _wordset(
    """sorry fine good ok okay here back done sure glad happy tired busy ready new not going trying working
    looking afraid aware interested just also still really so very korean english american japanese chinese
    german french""")

# --------------------------------------------------------------------------------------- English rules

_DEICTIC = _wordset("it that this them those these your you one something anything")

Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], list[Fact]]]


def _name(m: re.Match[str]) -> list[Fact]:
    v = _trim(m.group("v"), 3, cut=False)
    v = re.split(r"\s+(?:and|but|i|i'm|from|at)\b", v, flags=re.IGNORECASE)[0]
    return [Fact.of("name", v)] if v and v.split()[0].lower() not in _NOT_A_NAME else []


def _job(m: re.Match[str]) -> list[Fact]:
    v = _trim(m.group("v"), 5)
    return [Fact.of("job", v)] if v and _JOB_RE.search(v) else []


def _works_at(m: re.Match[str]) -> list[Fact]:
    v = _trim(m.group("v"), 4)
    return [Fact.of("job", f"works at {v}")] if v else []


def _prefer(m: re.Match[str]) -> list[Fact]:
    v = m.group("v").strip()
    v = re.split(r"\s+(?:because|since|when|but|as)\b|[,;]", v, flags=re.IGNORECASE)[0]
    v = " ".join(v.split()[:8]).strip(" .!")
    return [Fact.of("preference", f"prefers {v}")] if v else []


def _like(m: re.Match[str]) -> list[Fact]:
    verb = m.group("verb").lower()
    negated = bool(m.group("neg"))
    v = _trim(m.group("v"), 6)
    if not v or v.split()[0].lower() in _DEICTIC:
        return []  # "I like that idea" is a reaction to the conversation, not a lasting taste
    if negated or verb in ("hate", "dislike", "can't stand"):
        return [Fact.of("preference", f"dislikes {v}")]
    return [Fact.of("preference", f"{'loves' if verb == 'love' else 'likes'} {v}")]


def _uses(m: re.Match[str]) -> list[Fact]:
    v = _trim(m.group("v"), 6)
    return [Fact.of("tool", t) for t in _split_list(v) if t.split()[0].lower() not in _DEICTIC]


def _habit(m: re.Match[str]) -> list[Fact]:
    v = " ".join(m.group("v").split()[:10]).strip(" .!,")
    return [Fact.of("preference", f"{m.group('adv').lower()} {v}")] if v else []


def _speaks(m: re.Match[str]) -> list[Fact]:
    v = _trim(m.group("v"), 6, cut=False)
    return [Fact.of("language", t.capitalize()) for t in _split_list(v) if _LANGUAGES.match(t)]


def _project(m: re.Match[str]) -> list[Fact]:
    v = _trim(m.group("v"), 5)
    return [Fact.of("project", v)] if v else []


def _location(m: re.Match[str]) -> list[Fact]:
    v = _trim(m.group("v"), 4, cut=False)
    v = re.split(r"\s+(?:and|but|since|for|with|now)\b", v, flags=re.IGNORECASE)[0]
    return [Fact.of("location", v)] if v else []


_I_AM = r"(?:i'm|i’m|i am|im)"
# A value runs to the end of the clause; a dot inside a word ("Node.js", "store.py") does not end it.
_V = r"(?P<v>(?:[^.;!?]|\.(?=\w))+)"
_EN_RULES: list[Rule] = [
    (re.compile(r"\bmy name is\s+(?P<v>[^\s,.;!?][^,.;!?]*)", re.I), _name),
    (re.compile(r"\b(?:call me|i go by)\s+(?P<v>[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*)?)"), _name),
    # "Hi, I'm Minsu." — a capitalised word right after a greeting or at the start, and nothing after it.
    # The name itself must be capitalised (case-sensitive inside a case-insensitive pattern): "I'm using uv".
    (re.compile(rf"^(?:(?:hi|hello|hey)[,!]?\s+)?{_I_AM}\s+(?P<v>(?-i:[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?))\s*[.!,]?$",
                re.I), _name),
    (re.compile(rf"\b{_I_AM}\s+(?:a|an)\s+(?P<v>[^,.;!?]+)", re.I), _job),
    (re.compile(r"\bi work as\s+(?:a|an|the)?\s*(?P<v>[^,.;!?]+)", re.I), _job),
    (re.compile(r"\bi (?:work|am working) (?:at|for)\s+(?P<v>[^,.;!?]+)", re.I), _works_at),
    (re.compile(r"\bi (?:really |strongly |usually |generally )?prefer\s+(?P<v>[^.;!?]+)", re.I), _prefer),
    (re.compile(r"\bi (?P<neg>(?:really )?(?:don't|do not|dont) )?(?:really |absolutely )?"
                r"(?P<verb>like|love|enjoy|hate|dislike|can't stand)\s+(?P<v>[^,.;!?]+)", re.I), _like),
    (re.compile(rf"\bi (?:mostly |mainly |usually |always |daily )?use\s+{_V}", re.I), _uses),
    (re.compile(rf"\b{_I_AM} using\s+{_V}", re.I), _uses),
    (re.compile(r"\bi (?P<adv>always|never)\s+(?P<v>[^.;!?]+)", re.I), _habit),
    (re.compile(r"\bi speak\s+(?P<v>[^.;!?]+)", re.I), _speaks),
    (re.compile(r"\bmy (?:native|first|mother) (?:language|tongue) is\s+(?P<v>[^.;!?,]+)", re.I), _speaks),
    (re.compile(rf"\b{_I_AM} (?:currently |now )?working on\s+{_V}", re.I), _project),
    (re.compile(rf"\b(?:i live in|{_I_AM} based in|{_I_AM} from|i'm living in)\s+(?P<v>[^.;!?]+)", re.I),
     _location),
]

# ---------------------------------------------------------------------------------------- Korean rules

_KO_JOBS = (
    "개발자", "엔지니어", "디자이너", "학생", "대학생", "대학원생", "연구원", "연구자", "기획자", "매니저", "교수",
    "선생님", "교사", "의사", "간호사", "변호사", "과학자", "프로그래머", "인턴", "창업자", "대표", "팀장", "아키텍트",
    "분석가", "컨설턴트", "작가", "기자", "PM", "CTO", "CEO", "QA", "SRE", "데브옵스", "마케터", "회계사", "직장인",
)
_KO_SELF = r"(?:저는|전|나는|난|제가|내가)"
_KO_COPULA = r"(?:입니다|이에요|예요|에요|이야|야|이다|임|이고요|이고|이며|인데요|인데)"
# Short words that follow "저는 … 입니다" without being a name ("저는 반대입니다").
_KO_NOT_NAME = _wordset(
    """반대 찬성 동의 처음 다행 괜찮 혼자 다음 마지막 초보 문제 가능 불가능 무리 준비 완료 확인 여기 거기 상관없음
    한국인 외국인 기혼 미혼 남자 여자 성인 괜찮음 오케이 괜찮아 좋아 싫어 그래 아니""")
_KO_LANGS = frozenset(
    {"한국어", "영어", "일본어", "중국어", "스페인어", "프랑스어", "독일어", "러시아어", "베트남어", "태국어"})


def _ko_object(text: str) -> str:
    """The noun phrase before a Korean verb: particles stripped, the speaker's own topic dropped."""
    words = [w for w in text.split() if not re.fullmatch(_KO_SELF, w)]
    words = words[-3:]
    if not words:
        return ""
    words[-1] = strip_particles(words[-1])
    return " ".join(words).strip()


def _ko_other_subject(prefix: str) -> bool:
    # "친구는 커피를 좋아해요": a topic/subject other than the speaker means it is about someone else.
    for w in prefix.split():
        if re.fullmatch(_KO_SELF, w):
            continue
        if re.search(r"(?:은|는|이|가|께서)$", w) and not re.search(r"(?:를|을)$", w) and len(w) >= 2:
            return True
    return False


def _ko_name(m: re.Match[str]) -> list[Fact]:
    v = m.group("v").strip()
    return [Fact.of("name", v)] if v else []


# Korean rules are "<object> <verb>" with the object running back from the verb to the previous match or the
# sentence's last stop. Written as a lazy `[^.!?。]*?` before the verb, that is tried from every start position
# and scans ahead each time: quadratic (8,000 × 가 once held the event loop for 11 s). So each rule is only its
# *tail* (the verb), searched once left to right, and the object is sliced off the text before it (`_tail_facts`).
_STOPS = re.compile(r"[.!?。]")


@dataclass(frozen=True, slots=True)
class _Tail:
    """A Korean rule: `tail` found left to right; `make(obj)` turns the text before it into facts.
    `self_prefix`: a leading 저는/나는 of the object is the speaker, not part of it."""

    tail: re.Pattern[str]
    make: Callable[[str], list[Fact]]
    self_prefix: bool = False


def _ko_verb_rule(key: FactKey, template: str) -> Callable[[str], list[Fact]]:
    def make(head: str) -> list[Fact]:
        # Only the words after the last clause boundary belong to this verb.
        head = re.split(r"[,，]|(?:고|서|지만|는데)\s", head)[-1]
        words = head.split()
        if len(words) > 1 and _ko_other_subject(" ".join(words[:-1])):
            return []
        obj = _ko_object(head)
        if not obj:
            return []
        if key == "tool" and obj in _KO_LANGS:
            return [Fact.of("language", obj)]
        return [Fact.of(key, template.format(obj))]

    return make


def _ko_i_am_value(v: str) -> list[Fact]:
    v = v.strip()
    words = v.split()
    if any(v.endswith(j) for j in _KO_JOBS) and len(words) <= 3:
        return [Fact.of("job", v)]
    if len(words) == 1 and 2 <= len(v) <= 4 and re.fullmatch(r"[가-힣]+", v) and v not in _KO_NOT_NAME:
        return [Fact.of("name", v)]
    return []


def _ko_languages(head: str) -> list[Fact]:
    return [Fact.of("language", w) for w in re.split(r"\s+|와|과|랑|하고", _ko_object(head)) if w in _KO_LANGS]


_KO_NAME = re.compile(rf"(?:제|내|저의|나의)\s*이름은\s+(?P<v>\S+?){_KO_COPULA}?\s*[.!。]?$")
_KO_SELF_SP = re.compile(rf"{_KO_SELF}\s+")
_KO_SELF_LEAD = re.compile(rf"^\s*{_KO_SELF}?\s*")
_KO_END_COPULA = re.compile(rf"{_KO_COPULA}\s*[.!。]?$")
_KO_TAILS: list[_Tail] = [
    _Tail(re.compile(r"로\s+일(?:하고 있|해|합니|한다)"), _ko_i_am_value, self_prefix=True),
    _Tail(re.compile(r"\s+(?:더\s+)?선호(?:해|합니다|한다|하는 편|해요)"), _ko_verb_rule("preference", "{} 선호")),
    _Tail(re.compile(r"\s+(?:정말\s+|진짜\s+|너무\s+|아주\s+)?좋아(?:해|합니다|한다|하는)"),
          _ko_verb_rule("preference", "{} 좋아함")),
    _Tail(re.compile(r"\s+(?:정말\s+|진짜\s+|너무\s+)?싫어(?:해|합니다|한다|하는)"),
          _ko_verb_rule("preference", "{} 싫어함")),
    _Tail(re.compile(r"\s+(?:주로\s+|자주\s+|매일\s+)?(?:써|써요|씁니다|쓴다|쓰고\s*있|사용해|사용합니다|사용한다|"
                     r"사용하고\s*있|사용 중)"), _ko_verb_rule("tool", "{}")),
    _Tail(re.compile(r"(?:에|에서)\s+(?:살아|살고\s*있|삽니다|산다|거주)"), _ko_verb_rule("location", "{}")),
    _Tail(re.compile(r"\s*(?:를|을)?\s*(?:할 줄 알아|할 줄 압니다|해요|합니다|구사)"), _ko_languages),
]


def _tail_facts(s: str, rule: _Tail, stops: list[int]) -> list[Fact]:
    """Every match of a Korean rule, in one left-to-right pass: the object of a verb is the text from the end
    of the previous match (or the last stop after it) to the verb, and must hold a non-space character."""
    out: list[Fact] = []
    prev = 0
    pos = 1
    while (m := rule.tail.search(s, pos)) is not None:
        i = bisect.bisect_left(stops, m.start())
        start = max(prev, stops[i - 1] + 1 if i else 0)
        head = s[start:m.start()]
        if rule.self_prefix:
            head = head[_KO_SELF_LEAD.match(head).end():]  # type: ignore[union-attr]  # it matches ""
        if head.strip() and not head[-1:].isspace():
            out.extend(rule.make(head))
            prev = m.end()
            pos = m.end() + 1
        else:
            pos = m.start() + 1
    return out


def _ko_i_am(s: str, stops: list[int]) -> list[Fact]:
    """"저는 개발자입니다": the speaker's topic, then a copula ending the sentence. Only a few positions at the
    end can start the copula, so they are tried directly instead of scanning ahead from every 저는/전/난."""
    ends = [c for c in range(max(0, len(s) - 12), len(s)) if _KO_END_COPULA.match(s, c)]
    if not ends:
        return []
    i = bisect.bisect_left(stops, ends[-1])
    after_stop = stops[i - 1] + 1 if i else 0
    m = _KO_SELF_SP.search(s, after_stop)
    if m is None:
        return []
    # The shortest value: the leftmost copula start past the value's first character.
    cop = next((c for c in ends if c > m.end()), None)
    if cop is None or _STOPS.search(s, m.end(), cop):
        return []
    return _ko_i_am_value(s[m.end():cop])


# A statement of a lasting fact about oneself is short; a longer "sentence" is a paste (code, a log, a list
# without stops), and mining it would cost time for nothing.
MAX_SENTENCE_CHARS = 300


def _sentence_facts(sentence: str) -> list[Fact]:
    s = " ".join(sentence.split())
    if len(s) > MAX_SENTENCE_CHARS:
        return []
    hangul = bool(re.search(r"[가-힣]", s))
    out: list[Fact] = []
    if hangul:
        stops = [m.start() for m in _STOPS.finditer(s)]
        name = _KO_NAME.search(s)
        if name:
            out.extend(_ko_name(name))
        out.extend(_ko_i_am(s, stops))
        for rule in _KO_TAILS:
            out.extend(_tail_facts(s, rule, stops))
    for pattern, make in _EN_RULES:
        for m in pattern.finditer(s):
            # "I don't use X" / "I'm not a developer": a negation just before the match flips or voids it.
            if not hangul and _NEGATION_EN.search(s[max(0, m.start() - 12):m.start()]):
                continue
            out.extend(make(m))
    return out


def extract_facts(content: str, role: str) -> list[Fact]:
    """Stable facts the user states about themselves. Non-user roles yield [] by design (see module doc)."""
    if role.strip().lower() != "user" or not content:
        return []
    facts: list[Fact] = []
    # Split only what the speaker says of themselves: in "제 친구는 개발자이고 커피를 좋아해요" the second clause
    # is still about the friend, and on its own it would read as the user's preference.
    sentences = [c for sent in _SENTENCE_BREAK.split(content)
                 for c in (_KO_CLAUSE_BREAK.split(sent) if re.match(rf"\s*{_KO_SELF}\s", sent) else [sent])]
    for sentence in sentences:
        if not _usable(sentence):
            continue
        for f in _sentence_facts(sentence):
            value = f.value.strip(" .,!?'\"")
            if not value or len(value) > 120:
                continue
            fact = Fact.of(f.key, value)
            if fact not in facts:
                facts.append(fact)
    return facts


# ------------------------------------------------------------------------------------------- extractors


@runtime_checkable
class FactExtractor(Protocol):
    async def extract(self, content: str, role: str) -> list[Fact]: ...


class OfflineFactExtractor:
    name = "offline"

    async def extract(self, content: str, role: str) -> list[Fact]:
        # Pure CPU: off the event loop (the patterns are linear, but a 64 KiB message is still tens of ms).
        return await anyio.to_thread.run_sync(extract_facts, content, role)


class _LLMFact(BaseModel):
    key: FactKey
    value: str = Field(description="Short value in the user's words, e.g. 'Minsu', 'backend engineer', "
                       "'prefers tabs over spaces'")


class _LLMFacts(BaseModel):
    facts: list[_LLMFact]


_FACT_SYSTEM = """You extract stable facts about the user from one message the user wrote.
Rules:
- The message below is the USER speaking about themselves. Record only what the user states about themselves.
- Facts from the assistant or from tools never reach you; do not infer facts the user did not state.
- Skip questions, hypotheticals ("if I were…"), plans for a single day, and anything about other people
  ("my friend prefers…").
- key is one of: name, job, preference, tool, language, project, location, other.
- An empty list is the right answer when the message states no such fact."""


class LLMFactExtractor:
    """LLM variant; the role rule is enforced here as well as stated in the prompt."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.name = f"llm:{llm.name}"

    async def extract(self, content: str, role: str) -> list[Fact]:
        if role.strip().lower() != "user" or not content.strip():
            return []
        answer = await self.llm.complete_json(_FACT_SYSTEM, f"Speaker: user\nMessage:\n{content[:8000]}", _LLMFacts)
        out: list[Fact] = []
        for f in answer.facts:
            value = " ".join(f.value.split())
            if value and Fact.of(f.key, value) not in out:
                out.append(Fact.of(f.key, value))
        return out
