"""The stems a Korean word's ending may stand for, by rule, and the one-syllable verb stems a search matches as
prefixes.

A word is read as it is and then without the plural 들 ("책들" → 책), the casual endings 어/아/요 and the past
tense ㅆ on its last syllable ("갔" → 가(다), "그렸" → 그리(다), "봤" → 보(다), "했" → 하(다)). The dictionary
bridge (gieok.retrieval.ko_lexicon) looks senses up under these forms.

The full-text index holds a Hangul word as its character bigrams (gieok.core.text), so a verb whose stem is one
syllable cannot be matched by a phrase: "썼어" (wrote), "갔어" (went), "봤어" (saw) stem to 쓰, 가, 보, and a
document's "쓰고", "가서", "보러" hold those syllables only as the first half of a bigram. A search therefore
also matches the stem as a prefix of the document's tokens ("쓰"*: 쓰고, 쓰는, 쓰기). Only stems the ending
changed count (the written word itself is already a term), and not the few that begin half the tokens of any
Korean text (하, 있, 되, ...). A bare one-syllable word ending in ㄴ counts as the past adnominal of an open
stem ("가 본 도시" → 보); a noun of that shape (돈, 산, 손) then adds a prefix term too, whose low idf keeps its
weight small. Measured on the dev Korean conversation: recall@10 0.774 → 0.793 (endings) → 0.802 (ㄴ).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

# How a dictionary form was read from a word: "any" where a noun or a verb may leave it (the word itself, 책을 →
# 책, 찾는 → 찾, whose 는 is also the topic particle: 차는, "the car"), "verb" where only a verb's ending does (갔 →
# 가, 타러 → 타, 나간 → 나가), "dropped ㄹ" where a verb's stem lost its ㄹ before ㄴ (여는 → 열, 만든 → 만들).
Reading = Literal["any", "verb", "dropped ㄹ"]

_BASE, _FINALS, _VOWELS = 0xAC00, 28, 21
_SSANG_SIOT = 20        # ㅆ as a syllable's final: the past tense in 갔, 그렸, 봤, 했
NIEUN = 4               # ㄴ as a final: the past adnominal in 본, 간, 쓴
RIEUL = 8               # ㄹ as a final: doubled by a 르-irregular verb (골라, 불렀)
_HA = 18 * _VOWELS + 1  # (initial ㅎ, vowel ㅐ): 했 → 하
# Vowel index after the past tense contracted it, → the stem's own vowel(s): ㅕ→ㅣ (그렸→그리), ㅘ→ㅗ (봤→보),
# ㅝ→ㅜ (배웠→배우), ㅐ→ㅏ, ㅙ→ㅚ (됐→되), ㅓ→ㅡ or ㅓ (썼→쓰, 섰→서); others stay (갔→가).
_UNCONTRACT = {6: (20,), 9: (8,), 14: (13,), 1: (0,), 10: (11,), 4: (18, 4)}
_ENDINGS = ("어요", "아요", "어", "아", "요", "니", "냐", "지")
# The contracted vowels a casual present ends in (ㅕ ㅘ ㅝ ㅙ: 챙겨, 와, 키워, 돼; and 해), undone as the past's.
_CASUAL = frozenset({6, 9, 14, 10})
# The same contraction in the present tense, on a bare one-syllable stem: 써 → 쓰, 봐 → 보, 줘 → 주, 해 → 하.
_PRESENT = {4: 18, 9: 8, 14: 13, 1: 0}
# Stems that begin a large share of every Korean text's tokens (하다, 있다, 되다, the copula, demonstratives,
# bound nouns): as prefixes they match nearly every row.
_COMMON = frozenset("하 있 되 이 그 저 수 것 거".split())
# Pronouns, which a contracted topic particle (우린, 넌) or 서 (여기서) follows as a verb's ending would: read as
# the pronoun, not as a verb (우리다 "steep", 널다 "hang out", 여기다 "regard").
_PRONOUNS = frozenset("나 너 저 우리 저희 너희 여기 거기 저기 당신 자기".split())
# Verbs that say nothing (하다, 되다, 있다, and the auxiliaries 않다, 싶다): their forms are function words.
_EMPTY_VERBS = frozenset("하 되 있 않 싶".split())
# Stems never read as a verb's: those, and the other common stems (이, 그, 것, 거: 거고 is not 걸다 "hang").
_NO_VERB = _COMMON | _EMPTY_VERBS
# Syllables that follow a verb stem in its common forms (쓰고, 가서, 보러, 먹으려, 갔다, 썼어): a token made of a
# stem and one of them is that verb, where the bare prefix also meets nouns (가족, 보험). Not 지 or 도: 가지
# ("kinds"), 보도 (the press) are nouns far more often than verbs.
_VERB_NEXT = tuple("고 는 서 러 려 기 다 면 자 며 어 아 던".split())


def _syllable(initial_vowel: int, final: int = 0) -> str:
    return chr(_BASE + initial_vowel * _FINALS + final)


def syllable_parts(syllable: str) -> tuple[int, int, int] | None:
    """(initial, vowel, final) indices of a precomposed Hangul syllable; None for another character."""
    code = ord(syllable) - _BASE
    if not 0 <= code < 11172:
        return None
    iv, final = divmod(code, _FINALS)
    return iv // _VOWELS, iv % _VOWELS, final


# (initial, vowel) of the empty verbs' stems and of their contractions with 어/아 (해, 돼).
_EMPTY_ONSETS = frozenset(p[:2] for s in (*_EMPTY_VERBS, "해", "돼") if (p := syllable_parts(s)) is not None)


@lru_cache(maxsize=8192)
def lemmas(word: str) -> tuple[str, ...]:
    """`word` and the forms its ending may stand for, most literal first."""
    return tuple(form for form, _ in _readings(word))


@lru_cache(maxsize=8192)
def _readings(word: str) -> tuple[tuple[str, Reading], ...]:
    """`lemmas`, each "verb" where only a verb's ending leaves it (갔 → 가, 먹어 → 먹, 키워 → 키우), "any" where a
    noun's particle may leave it too (책들 → 책, 커피요 → 커피)."""
    out: list[tuple[str, Reading]] = [(word, "any")]
    w = word
    if w.endswith("들") and len(w) >= 2:
        w = w[:-1]
        out.append((w, "any"))
    for end in _ENDINGS:
        if w.endswith(end) and len(w) > len(end):
            w = w[: -len(end)]
            out.append((w, "any" if end == "요" else "verb"))  # 요 follows a noun too ("커피요"); the others a verb
            break
    if len(w) > 1 and w[-1] in "었았였":
        out.append((w[:-1], "verb"))
        if w[-1] == "였":
            out.append((w[:-1] + "하", "verb"))
    elif w and (parts := syllable_parts(w[-1])) and parts[2] == _SSANG_SIOT:
        initial, vowel, _ = parts
        if initial * _VOWELS + vowel == _HA:
            out.append((w[:-1] + "하", "verb"))
        for v in _UNCONTRACT.get(vowel, (vowel,)):
            out.append((w[:-1] + _syllable(initial * _VOWELS + v), "verb"))
    elif w and (parts := syllable_parts(w[-1])) and parts[2] == 0 and (parts[1] in _CASUAL or parts[0] * _VOWELS +
                                                              parts[1] == _HA):
        # The casual present contracts the stem's last vowel with 어/아 as the past tense does, without the ㅆ:
        # 키워 → 키우(다), 챙겨 → 챙기(다), 돼 → 되(다), 공부해 → 공부하(다). "뭐 키워?", "어디서 일해?" are how
        # people ask, and the dictionary knew none of these forms (키워 went to the model, which said "kinda").
        initial, vowel, _ = parts
        for v in (0,) if initial * _VOWELS + vowel == _HA else _UNCONTRACT[vowel]:
            out.append((w[:-1] + _syllable(initial * _VOWELS + v), "verb"))
    # 르-irregular verbs double their ㄹ before 아/어: 골랐 → 고르(다) "chose", 불렀 → 부르(다), 몰라 → 모르(다).
    if len(w) >= 2 and w[-1] in "랐렀라러" and (prev := syllable_parts(w[-2])) and prev[2] == RIEUL:
        out.append((w[:-2] + _syllable(prev[0] * _VOWELS + prev[1]) + "르", "verb"))
    return _first_each(out)


def closed(syllable: str) -> bool:
    """The Hangul syllable ends in a consonant (책, 을), not a vowel (파, 이)."""
    parts = syllable_parts(syllable)
    return parts is not None and parts[2] != 0


def ends_in_rieul(word: str) -> bool:
    """The word's last syllable ends in ㄹ (갈, 살, 열)."""
    parts = syllable_parts(word[-1]) if word else None
    return parts is not None and parts[2] == RIEUL


def _first_each(readings: list[tuple[str, Reading]]) -> tuple[tuple[str, Reading], ...]:
    """Each form once, as it was first read."""
    seen: dict[str, Reading] = {}
    for form, how in readings:
        seen.setdefault(form, how)
    return tuple(seen.items())


# One-syllable particles a two-syllable word may end in (책을, 집에, 춤과, 팀은): query_stem keeps such a word whole
# (one syllable is too short for the bigram index) but the dictionary knows its noun.
_PARTICLES = frozenset("을 를 이 가 은 는 에 와 과 도 로 의 만 랑".split())
# Endings of one syllable that join a verb stem to what follows: the adnominal 는 (찾는 → 찾다), purpose 러 and
# intent 려 (타러, 쉬려), and the connectives 고, 서, 며, 면.
_JOINING = frozenset("는 러 려 고 서 며 면".split())
# Endings of more than that, or that end a sentence, which only a verb stem (or its past, or its adnominal) takes:
# the retrospective 던 (갔던, 했던), the nominaliser 기 (돕기), the plain and quoted statement 다 / 다고 (든다고),
# 까 (할까), 게 (참여하게), and the connectives a casual question uses. Longest first. A noun ending in one of these
# syllables (가게, 바다, 경기) is a headword as written, which is always tried first.
_VERB_ENDINGS = tuple(sorted("던 기 다 다고 까 게 지만 는데 면서 도록 려고 니까 어서 아서 어도 아도 더라".split(),
                             key=len, reverse=True))


@lru_cache(maxsize=8192)
def dictionary_lemmas(word: str) -> tuple[tuple[str, Reading], ...]:
    """`lemmas`, then the forms a dictionary may list the word under that the full-text terms do not use: a short
    noun without its particle (책을 → 책), a verb stem without a joining ending (찾는 → 찾) or without the
    adnominal ㄴ / ㄹ of its last syllable (나간 → 나가, 기릴 → 기리), the ㄹ a stem drops before ㄴ (여는 → 열,
    만든 → 만들, 노는 → 놀), the passive 이 contracted into 여 (쓰여 → 쓰이), and what a verb's ending leaves
    (갔던 → 가, 돕기 → 돕, 든다고 → 들); each with how it was read. Tried after every literal form, so a word that
    is itself a headword keeps its own senses. A stem with its ㄹ restored comes before the stem without it: the
    caller takes it only where it is a verb and the other is not (여는 is 열다's, not 여 "woman" with a particle;
    가는 stays 가다's)."""
    return _sorted_out(_all_readings(word))


def _sorted_out(readings: tuple[tuple[str, Reading], ...]) -> tuple[tuple[str, Reading], ...]:
    # The common stems as a verb's (하, 되, 있; 것, 거) say nothing, and their homographs (하 "ah", 되 "doe") are
    # not meant: a form of 하다 or 되다 is a function word (`empty_verb_form`).
    return _first_each([(f, "any" if how == "verb" and f in _PRONOUNS else how) for f, how in readings
                        if not (how == "verb" and f in _NO_VERB)
                        and (how != "dropped ㄹ" or without_final(f) not in _PRONOUNS | _NO_VERB)])


@lru_cache(maxsize=1024)
def adnominal_lemmas(word: str) -> tuple[tuple[str, Reading], ...]:
    """The verb readings of a one-syllable word standing as an adnominal (`adnominal_words`): 산 → 사(다), 큰 → 크(다),
    연 → 열(다) with its dropped ㄹ, 갈 → 가(다)."""
    return _sorted_out(tuple((f, how) for f, how in _all_readings(word, True) if how != "any"))


def empty_verb_form(word: str) -> bool:
    """Whether `word` is a form of a verb that says nothing (됐어, 돼, 할까, 하기, 싶은, 않게): a function word, as
    English's "got", "become", "do" are stopwords."""
    # Those stems are one syllable, so such a word begins with one of them (or its contraction, 해, 돼): a test of
    # the first syllable spares reading every other word's endings (~7 µs a word not seen before).
    first = syllable_parts(word[0]) if word else None
    if first is None or first[:2] not in _EMPTY_ONSETS:
        return False
    return any(how == "verb" and f in _EMPTY_VERBS for f, how in _all_readings(word))


@lru_cache(maxsize=8192)
def _all_readings(word: str, before_ending: bool = False) -> tuple[tuple[str, Reading], ...]:
    """Every form `word` may be read as, in order, the empty verbs' and pronouns' too (`dictionary_lemmas` sorts
    those out); `before_ending`: `word` is what a verb's ending left."""
    out = list(_readings(word))
    stems: list[tuple[str, Reading]] = []
    if len(word) == 2 and word[-1] in _PARTICLES and word[-1] not in _JOINING:
        out.append((word[:-1], "any"))
    if len(word) >= 2 and word[-1] in _JOINING:
        # 는 after an open syllable is also the topic particle (차는, "the car"); after a closed one it is only
        # the adnominal (먹는, 찾는), as the particle is 은 there.
        open_before = (end := syllable_parts(word[-2])) is not None and end[2] == 0
        stems.append((word[:-1], "any" if word[-1] == "는" and open_before else "verb"))
    if len(word) >= 2 and word[-1] == "여":
        out.append((word[:-1] + "이", "verb"))
    last = syllable_parts(word[-1]) if word else None
    if last and last[2] in (NIEUN, RIEUL) and (len(word) >= 2 or before_ending):
        # Not one syllable standing alone: names are (존, 벤, 준), which would read as 조다, 베다 ("cut"), 주다.
        # Before a verb's ending it is a verb's (든다 → 들다).
        stems.append((word[:-1] + _syllable(last[0] * _VOWELS + last[1]), "verb"))
    for ending in _VERB_ENDINGS:
        if word.endswith(ending) and len(word) > len(ending):
            # What the ending leaves is a verb's: its stem, its past (갔던 → 가), its adnominal (든다 → 들). Before
            # 게 and 까 an ㄹ is the future's (갈게 "I'll go" → 가다, 줄게 → 주다), which a ㄹ stem's own would
            # look the same as (갈다 "grind", 줄다 "shrink"): the commoner reading first.
            rest = word[: -len(ending)]
            if ending in ("게", "까") and ends_in_rieul(rest):
                out.append((without_final(rest), "verb"))
            out.extend((f, "verb" if how == "any" else how) for f, how in _all_readings(rest, True))
            break
    for st, how in stems:
        end = syllable_parts(st[-1])
        if end and end[2] == 0:
            out.append((st[:-1] + _syllable(end[0] * _VOWELS + end[1], RIEUL), "dropped ㄹ"))
        out.append((st, how))
    return tuple(out)


def without_final(form: str) -> str:
    """`form` with its last syllable's final consonant dropped (열 → 여): the stem a "dropped ㄹ" form was read
    from."""
    end = syllable_parts(form[-1]) if form else None
    return form[:-1] + _syllable(end[0] * _VOWELS + end[1]) if end else form


@lru_cache(maxsize=8192)
def prefix_stems(word: str) -> tuple[str, ...]:
    """The one-syllable stems `word`'s ending stands for, to match as token prefixes (none for most words)."""
    out: list[str] = []
    for form in lemmas(word):
        if len(form) != 1:
            continue
        out.append(form)
        parts = syllable_parts(form)
        if parts and parts[2] == 0 and parts[1] in _PRESENT:
            out.append(_syllable(parts[0] * _VOWELS + _PRESENT[parts[1]]))
    if len(word) == 1 and (parts := syllable_parts(word)) and parts[2] == NIEUN:
        # The past adnominal ㄴ on an open stem: "가 본 도시" (a city … have been to), "어제 간 식당", "쓴 책".
        out.append(_syllable(parts[0] * _VOWELS + parts[1]))
    return tuple(s for s in dict.fromkeys(out) if s != word and s not in _COMMON)


def verb_forms(stem: str) -> tuple[str, ...]:
    """The two-syllable tokens that are `stem` as a verb (쓰 → 쓰고, 쓰는, 쓰서, ...): what a one-syllable stem
    matches as a word of the query when a prefix would be too loose."""
    return tuple(stem + s for s in _VERB_NEXT) if len(stem) == 1 and syllable_parts(stem) else ()
