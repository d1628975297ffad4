"""Offline keyphrase extraction for d_tags, English and Korean, with no model.

Why rules and not a model: the librarian must tag with no network and no key (ARCHITECTURE §5), and a tag only
has to be a good *handle* for filtering and tag overlap, not a summary.

- English words are lower-cased, stopwords dropped, and grouped by their Snowball stem ("migrate" and
  "migration" are one candidate, shown in its most frequent surface form).
- Korean words lose their particles and endings, longest suffix first ("마이그레이션을" → "마이그레이션");
  하다-verbs keep their noun ("논의했다" → "논의"); other predicates ("있고", "마시면서") are dropped.
- Code identifiers (snake_case, CamelCase, `store.py`, `httpx2`) are kept as written, lower-cased.

Scoring is YAKE/RAKE-flavoured: frequency, an early-position bonus, a length bonus, and a bonus for
identifiers and mid-sentence capitals. A multi-word phrase only competes when it recurs (or is a run of proper
nouns): in a one-line chat turn the single words are the reusable tags, a 3-word n-gram seen once is not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache

import Stemmer

__all__ = ["extract_keyphrases", "strip_particles"]

_stemmer = Stemmer.Stemmer("english")

# Tokens: Latin words/identifiers (with inner . _ - joins, so `store.py`, `snake_case`, `e5-small`), Hangul runs,
# digit runs. Anything between two tokens that is not plain whitespace ends a phrase.
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:[.\-][A-Za-z0-9_]+)*|[가-힣]+|[0-9]+(?:[.,][0-9]+)*")
_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")
_SENTENCE_END = re.compile(r"[.!?。\n]")

def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _longest_first(text: str) -> tuple[str, ...]:
    # Suffix lists are tried in this order, so "에서는" wins over "는"; ties sorted for a stable order.
    return tuple(sorted(_wordset(text), key=lambda w: (-len(w), w)))


# English stopwords plus chat filler and generic verbs: they carry no topic and would crowd out the nouns.
_EN_STOP = _wordset(
    """a about above across actually after again against ago all almost also although always am among an and
    another any anybody anyone anything anyway anywhere are aren't around as ask asked at away back be became
    because become been before being below best better between both but by can can't cannot could couldn't
    did didn't do does doesn't doing don't done down during each either else enough etc even ever every
    everyone everything few find first for from further get gets getting give go goes going gone good got
    great had hadn't has hasn't have haven't having he her here hers herself hey hi him himself his how
    however i i'd i'll i'm i've if in instead into is isn't it it's its itself just keep know last later
    least less let let's like likely look made make makes making many may maybe me might mine more most much
    must my myself need needs never new next no nobody none nor not nothing now of off often oh ok okay on
    once one only onto or other others otherwise our ours ourselves out over own perhaps please put quite
    rather really right said same say says see seem seems shall she should shouldn't since so some somebody
    someone something sometimes soon still such sure take tell than thank thanks that that's the their
    theirs them themselves then there there's these they they're thing things think this those though
    through thus to today together told tomorrow too took toward tried try trying two under unless until
    up upon us use used uses using usually very via want wanted wants was wasn't way we we'll we're we've
    well went were weren't what what's whatever when where whether which while who whom whose why will
    with within without won't would wouldn't yeah yes yesterday yet you you'd you'll you're you've your
    yours yourself e.g i.e vs via etc lot lots bit kind sort""")

# Korean words that are grammatical or too generic to be a topic (time words, pronouns, adverbs, conjunctions).
_KO_STOP = _wordset(
    """내일 오늘 어제 모레 지금 이제 오전 오후 아침 저녁 점심 밤 새벽 주말 평일 이번 다음 지난 요즘 최근 나중
    저 제 나 내 저희 우리 너 당신 그 이 그것 이것 저것 거기 여기 저기 그거 이거 저거 무엇 뭐 뭔가 어디 누구 언제
    정말 진짜 너무 아주 매우 조금 좀 많이 잘 더 또 다시 먼저 같이 함께 계속 바로 아직 벌써 항상 자주 가끔 모두 다
    그리고 그래서 그러나 하지만 그런데 그럼 그러면 또는 및 혹은 즉 때문 때문에 위해 대해 통해 관련
    것 거 수 때 등 중 정도 경우 부분 생각 얘기 이야기 문제 사실 내용 방법 하나 둘 번 개 분 씨 님
    있다 없다 하다 되다 같다 이다 아니다 네 예 아니요 응 감사 안녕 좋아 싫어 필요 중요 가능 원하""")

# Common verbs (as Snowball stems): in a chat turn they say what happened, not what it was about. Kept out of
# the stopword list because their -ing forms are often topics ("logging", "caching").
_EN_VERB_STEMS = frozenset(_stemmer.stemWords(sorted(_wordset(
    """add added agree allow apply believe bring call came change check choose claim come consider continue
    decide describe discuss explain feel fix follow forget found happen hate help hope include keep learn
    leave like live love mean mention move notice open plan prefer remember reply return run seem send show
    start stop suggest suppose talk tell understand wait walk watch wish wonder work write wrote"""))))

# Generic words that are rarely the topic themselves (the project is the p_tag's job): kept, but ranked down.
_GENERIC = frozenset({"project", "projects", "work", "task", "stuff", "user", "assistant", "프로젝트", "작업", "일"})

# 하다/되다-family endings: the part before them is a Sino-Korean verbal noun, a good tag ("논의했다" → "논의").
_HADA = _longest_first(
    """하다 한다 했다 했고 했는데 했어 했어요 했습니다 합니다 합니까 해요 해서 하고 하는 하면 하면서 하며 하기 하지
    하지만 한 할 함 해 했으며 하였다 하였습니다 하려고 하자 하세요 해야 해야지 했지만 해보자 해봤다 했던 하던
    된다 됐다 되었다 됩니다 되고 되는 되면 되어 돼 돼요 됐어요 되었습니다 된 될 됨 시켰다 시켜 시킨""")

# Particles and copula endings that follow a noun. Longest first so "에서는" wins over "는".
_PARTICLES = _longest_first(
    """은 는 이 가 을 를 에 에서 에게 께 한테 으로 로 와 과 도 만 의 랑 이랑 하고 나 이나 까지 부터 보다 처럼 마다
    조차 마저 뿐 에서는 에서도 에서의 에게는 에게도 으로는 으로도 으로의 로는 로도 로의 과는 와는 과도 와도 에는 에도
    에의 까지는 까지도 부터는 만큼 대로 이란 란 이라는 라는 이라고 라고 이며 이고 이었다 였다 이었고 였고 입니다
    이에요 예요 에요 이야 이다 이죠 죠 이지만 인데 인가 이랑은 께서 께서는 에서부터 으로부터 로부터 들 들이 들은 들을
    들의 들도 들에게""")
# One-syllable particles that also end many nouns ("회의", "결과", "속도"): only stripped when at least
# two syllables remain, so "회의" stays whole while "커피가" still loses its particle.
_AMBIGUOUS = _wordset("이 가 의 도 로 과 와 만 나 들")
# Predicate endings: a word ending in one of these is a verb/adjective form, not a topic ("있고", "마시면서").
# The multi-syllable ones are safe on any word; the one-syllable ones also end many nouns, so they are only
# trusted on short words (long bare Hangul words are usually loanwords or compounds: "데이터베이스").
_PREDICATE_STRONG = _longest_first(
    """습니다 니다 으면서 면서 지만 는데 은데 니까 어서 아서 어요 아요 에요 세요 네요 군요 려고 도록 었다 았다 였다
    겠다 는다 으면 으며 잖아 거든 는지 을까 ㄹ까""")
_PREDICATE_WEAK = _longest_first("다 요 죠 고 게 니 까 냐 던 았 었 겠")
# Nouns that end like a predicate and are worth keeping; a cheap guard for the commonest collisions.
_KO_NOUN_KEEP = _wordset("바다 보고 사고 광고 창고 재고 원고 경고 신고 예고 최고 참고 가게 무게 유니")


def strip_particles(word: str) -> str:
    """A Hangul word without its trailing particle or copula ending (longest suffix first)."""
    for suf in _PARTICLES:
        if word.endswith(suf) and len(word) > len(suf):
            rest = word[: -len(suf)]
            if suf in _AMBIGUOUS and len(rest) < 2:
                continue
            return rest
    return word


def _korean_noun(word: str) -> tuple[str | None, bool]:
    """(noun or None, whether a suffix was removed). A removed suffix ends a noun phrase."""
    for suf in _HADA:
        if word.endswith(suf) and len(word) - len(suf) >= 2:
            return word[: -len(suf)], True
    stripped = strip_particles(word)
    if stripped != word:
        return stripped, True
    if word in _KO_NOUN_KEEP:
        return word, False
    if word.endswith(_PREDICATE_STRONG) or (len(word) < 5 and word.endswith(_PREDICATE_WEAK)):
        return None, True
    return word, False


def _is_hangul(word: str) -> bool:
    return "가" <= word[0] <= "힣"


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def _is_identifier(tok: str) -> bool:
    """snake_case, CamelCase, dotted names (`store.py`, `gieok.librarian`) and letter-digit mixes (`httpx2`)."""
    if "_" in tok or "." in tok or _CAMEL.search(tok):
        return True
    return any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok)


@dataclass
class _Word:
    key: str  # grouping key: stem, identifier, or Korean noun
    surface: str  # lower-cased form to show
    idx: int  # token index in the text
    weight_bonus: float = 1.0


@dataclass
class _Group:
    first: int
    count: int = 0
    surfaces: dict[str, int] = field(default_factory=dict)
    bonus: float = 1.0
    length: int = 0


def _words(text: str) -> list[list[_Word]]:
    """The text as phrases: runs of content words not broken by punctuation, stopwords or particles."""
    text = _URL.sub(" . ", text)
    phrases: list[list[_Word]] = []
    cur: list[_Word] = []
    last_end = 0
    sentence_start = True

    def close() -> None:
        nonlocal cur
        if cur:
            phrases.append(cur)
        cur = []

    for idx, m in enumerate(_TOKEN.finditer(text)):
        gap = text[last_end : m.start()]
        if gap.strip():
            close()
            if _SENTENCE_END.search(gap):
                sentence_start = True
        elif "\n" in gap:
            close()
            sentence_start = True
        last_end = m.end()
        tok = m.group()
        was_sentence_start, sentence_start = sentence_start, False

        if _is_hangul(tok):
            if tok in _KO_STOP:
                close()
                continue
            noun, ends_phrase = _korean_noun(tok)
            if noun is None or noun in _KO_STOP or len(noun) < 2:
                close()
                continue
            cur.append(_Word(noun, noun, idx))
            if ends_phrase:
                close()
            continue
        if tok[0].isdigit():
            close()
            continue
        low = tok.lower()
        if _is_identifier(tok):
            if low in _EN_STOP:
                close()
                continue
            cur.append(_Word(low, low, idx, 1.6))
            continue
        if low in _EN_STOP or len(low) < 2:
            close()
            continue
        # A capital in mid-sentence marks a name (Postgres, Centrazen, API): more likely a topic.
        bonus = 1.3 if (tok[0].isupper() and not was_sentence_start) or (tok.isupper() and len(tok) > 1) else 1.0
        stem = _stem(low)
        if stem in _EN_VERB_STEMS and bonus == 1.0:
            bonus = 0.5
        elif low.endswith(("ed", "ly")) and bonus == 1.0:
            bonus = 0.7  # past tenses and adverbs, without a tagger to tell them apart from nouns
        cur.append(_Word(stem, low, idx, bonus))
    close()
    return phrases


def _normalise(tag: str) -> str:
    return re.sub(r"\s+", "-", tag.strip().lower())


def extract_keyphrases(text: str, k: int = 5) -> list[str]:
    """Up to `k` normalised topic tags (lower-case, spaces → '-', at most 3 words), best first."""
    if k <= 0 or not text or not text.strip():
        return []
    phrases = _words(text)
    groups: dict[str, _Group] = {}
    for ph in phrases:
        for w in ph:
            g = groups.setdefault(w.key, _Group(first=w.idx))
            g.count += 1
            g.surfaces[w.surface] = g.surfaces.get(w.surface, 0) + 1
            g.bonus = w.weight_bonus if g.count == 1 else max(g.bonus, w.weight_bonus)
            g.length = max(g.length, len(w.surface))
    if not groups:
        return []

    def word_score(key: str) -> float:
        g = groups[key]
        tf = 1.0 + math.log(g.count)
        position = 1.0 + 0.5 / (1.0 + g.first)  # early words are more often the topic; mild, fades quickly
        # Longer words are more specific; a Hangul syllable carries about as much as two or three letters.
        if _is_hangul(next(iter(g.surfaces))):
            length = 0.7 + 0.1 * min(g.length, 4)
        else:
            length = 0.6 + 0.1 * min(g.length, 5) - (0.2 if g.length < 3 else 0.0)
        generic = 0.5 if any(s in _GENERIC for s in g.surfaces) else 1.0
        return tf * position * length * g.bonus * generic

    def surface(key: str) -> str:
        g = groups[key]
        # Most frequent surface form; among ties a singular noun-like form ("migration" over "migrations"
        # and "migrate"), then the shorter one.
        def rank(kv: tuple[str, int]) -> tuple[int, bool, bool, int, str]:
            s, n = kv
            return (-n, s.endswith("s"), not s.endswith(("ion", "ment", "ing", "ance", "ence", "ity")), len(s), s)

        return min(g.surfaces.items(), key=rank)[0]

    candidates: dict[tuple[str, ...], tuple[float, int]] = {}
    for key in groups:
        candidates[(key,)] = (word_score(key), groups[key].first)
    ngram_counts: dict[tuple[str, ...], int] = {}
    ngram_first: dict[tuple[str, ...], int] = {}
    ngram_proper: dict[tuple[str, ...], bool] = {}
    for ph in phrases:
        for n in (2, 3):
            for i in range(len(ph) - n + 1):
                gram = tuple(w.key for w in ph[i : i + n])
                if len(set(gram)) < n:
                    continue
                ngram_counts[gram] = ngram_counts.get(gram, 0) + 1
                ngram_first.setdefault(gram, ph[i].idx)
                proper = all(w.weight_bonus > 1.0 for w in ph[i : i + n])
                ngram_proper[gram] = ngram_proper.get(gram, False) or proper
    for gram, cnt in ngram_counts.items():
        if cnt < 2 and not ngram_proper[gram]:
            continue
        # RAKE's idea: a phrase is worth its words when they (almost) always occur together.
        cohesion = cnt / max(groups[w].count for w in gram)
        candidates[gram] = (sum(word_score(w) for w in gram) * cohesion, ngram_first[gram])

    ranked = sorted(candidates.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    chosen: list[tuple[str, ...]] = []
    for gram, _ in ranked:
        keys = set(gram)
        if any(keys <= set(c) or set(c) <= keys for c in chosen):
            continue  # a phrase and its own words are one topic, not two tags
        chosen.append(gram)
        if len(chosen) == k:
            break
    out: list[str] = []
    for gram in chosen:
        tag = _normalise(" ".join(surface(w) for w in gram))
        if tag and tag not in out:
            out.append(tag)
    return out
