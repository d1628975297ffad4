"""The weights of ranking (ARCHITECTURE §6) as named recipes, so a benchmark compares recipes, not code paths."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

HALF_LIFE_DAYS = {"working": 2.0, "episodic": 30.0, "semantic": 180.0, "procedural": 180.0}


@dataclass(frozen=True, slots=True)
class Recipe:
    """Weights of the §6 formulas. Defaults differ from memento's table where the dev benchmark measured a
    loss (docs/measurements.md): recency 0.20 → 0.02 (a 30-day half-life outweighed relevance and buried
    months-old evidence: LoCoMo R@10 0.31 → 0.68), BM25 0.30 → 0.40, keep threshold 0.35 → 0.05 (0.35 dropped
    a third of the evidence; the keyword fallback already handles "nothing relevant"). Added to §6: a bonus
    for rows created on a date the query names (`r_date`)."""

    name: str
    use_vectors: bool = True
    use_keywords: bool = True
    # 100 rather than §6's 50 per source: a conversation's evidence is often a low-scoring turn of either
    # list (LoCoMo dev R@20 0.789 → 0.797); ranking 200 candidates costs well under a millisecond.
    candidates: int = 100
    # S = a·relevance + b·recency + c·importance + d·usage − e·duplication
    w_relevance: float = 0.50
    w_recency: float = 0.02
    w_importance: float = 0.20
    w_usage: float = 0.10
    # Kept on although the dev benchmark gains without it (R@5 +0.008, R@10 +0.003): without the penalty the
    # vector recipe ranked a same-language but unrelated Korean row above the English translation of the
    # query (test_korean_query_finds_korean_and_english_memory; with it the two now sit within 0.001, and the
    # default recipe's dictionary bridge tells them apart). Penalising only near-duplicates (cos > 0.9)
    # lost 0.09 R@10: neighbouring turns share their embedded context.
    w_duplication: float = 0.15
    # relevance = cos·w + bm25/(bm25+k)·w + jaccard·w + title·w
    r_cos: float = 0.60
    r_bm25: float = 0.40
    r_tags: float = 0.05
    r_title: float = 0.05
    # A chat message's semantic part also counts its closest neighbour's: cos_part + r_neighbour · the best
    # rescaled cosine of the messages just before and after it in its session. Evidence is often a reply or a
    # set-up whose own words share little with the question while the message next to it is close to it.
    # Below 1 so that of two adjacent messages the one closer to the question keeps its edge (at 1 both get the
    # same sum). Over one stored memory (recall@5 / @10; date bonus by precision in): LoCoMo dev 0.734 / 0.824
    # → 0.762 / 0.836 (1.0: 0.764 / 0.840, 0.9: 0.764 / 0.839); Korean questions over English memory 0.560 /
    # 0.667 → 0.591 / 0.697 (1.0: 0.587 / 0.697); Korean memory (ko 30) 0.696 / 0.802 → 0.715 / 0.802 (1.0:
    # 0.798, 1.25: 0.788), its English original 0.840 → 0.868 at @10, so ko / en 0.955× → 0.92×. Nothing tried
    # lifted ko 30 recall@10: a higher floor for the neighbour term of Korean memory under a Korean query (0.76:
    # 0.798, 0.78–0.82: 0.788; 0.60–0.72: 0.802), another weight for it (0.5–1.5: 0.788–0.802), the pool's
    # median or 75th-percentile cosine as floor (0.779), the term only when the neighbour beats the row
    # (English 0.645). Its recall@20 is 0.836: what is missing is not in the top 20 to be lifted. The next
    # message alone, or max(own, neighbour) instead of the sum, gained nothing at recall@10.
    r_neighbour: float = 0.85
    # Only the best candidates by their own relevance have their neighbours looked up (one query, vectors
    # decoded per neighbour): on dev none beyond the top 60 of ~200 reached the top 10 through a neighbour
    # (recall@10 identical: English 0.836, xq 0.697), provided the date bonus counts in that order (without
    # it three questions naming a day were lost).
    neighbour_candidates: int = 60
    # Bonus for a memory created inside a time window the query names ("on 3 June", "지난주"): query_dates;
    # this much for a named day, a third of it for a month or a week (query_dates.LONG_WINDOW_SHARE).
    r_date: float = 0.30
    # Bonus for a row stating a time ("yesterday", "last May", "지난주") when the query asks when ("when did …",
    # "언제 …") and names no date itself (time_words): of several rows about the same event, the one saying when
    # it happened answers; in proportion to the row's relevance without it next to the best row's, so that it
    # tells apart rows about the event without making a row about something else relevant. Dev recall@5 / @10
    # (English; Korean questions over English memory; Korean memory): 0.762 / 0.835 → 0.766 / 0.835 (temporal
    # @5 0.922 → 0.944); xq 0.604 / 0.719 → 0.608 / 0.721; ko 30 unchanged (its temporal questions were all
    # found). Flat from 0.02 to 0.10; 0.20 trades temporal @10 (0.967 → 0.956) for multi-hop. Aimed at held-out
    # temporal questions (0.74 against 0.94 on dev).
    r_when: float = 0.05
    # Bonus for the newest (or oldest) of the rows about the question's subject when it asks for the last or the
    # first time ("when did we last deploy …", "latest", "처음", "마지막"; gieok.retrieval.order_words): the rows
    # whose relevance is at least `order_group` of the best, in proportion to theirs, as for `r_when`. Dev recall
    # identical at 0.2 and 0.3 on every set; at 0.2 "First deploy of the search API … this afternoon" (closer, and
    # saying when) tied the newest deploy note for "when did we last deploy the search API?".
    r_order: float = 0.3
    order_group: float = 0.8
    # A row the librarian found replaced by a newer one (gieok.librarian.contradictions: "Deploys happen on
    # Friday" after "… on Monday" is written; `meta.superseded_by`) keeps this share of its relevance, unless the
    # query asks for the first time: a stale fact worded like the question otherwise came first (its relevance
    # 1.010 against the new one's 1.000 for "배포 요일"). It is still shown, below, and says it is outdated: a
    # search for the history finds it. Nothing on LoCoMo is superseded (its rows are chat turns, not facts).
    superseded_share: float = 0.7
    # A Korean query's feedback terms (gieok.retrieval.feedback): the words its best `feedback_rows` candidates
    # share, their BM25 added to a row's at this weight; their full-text search brings at most
    # `feedback_candidates` rows (100 cost the Korean search at 100,000 memories half again its time, 30 a
    # fifth, with the same dev recall@10).
    r_feedback: float = 0.3
    feedback_rows: int = 8
    feedback_candidates: int = 30
    # Extra candidates drawn from each named window, so an old but dated memory is not left out of the pool.
    date_candidates: int = 20
    bm25_k: float = 2.0
    # An English query's BM25 also counts as a share of the best BM25 among its candidates (min-max
    # normalisation, which hybrid-fusion studies prefer to raw scores): bm25_part = (1 − s)·bm/(bm + k) +
    # s·bm/max(best, k). A question whose words are common everywhere (low idf) still lets the rows that match
    # it best stand out against the vector arm; the best counts as at least k, so that a negligible match (a word
    # in nearly every row of a small store, BM25 ≈ 0) is never a full one. Dev recall@5 / @10: English 0.789 /
    # 0.849 → 0.798 / 0.859 (every conversation up at both; adversarial @10 0.924 → 0.964), the three
    # conversations in one memory 0.771 / 0.838 → 0.790 / 0.848; share 0.3: 0.801 / 0.857 and 0.787 / 0.841; k as
    # floor or anything up to 4: the same. Only for rows in Latin letters under a query in Latin letters: a Korean
    # query's BM25 is character bigrams (ko 30: 0.710 / 0.822 → 0.682 / 0.831), and across scripts it is
    # dictionary translations (English questions over ko 30 unchanged this way, 0.591 / 0.674 the other).
    bm25_share_of_best: float = 0.5
    # A message that mostly asks is seldom what answers a question (gieok.retrieval.asking): relevance −
    # r_question × the share of its text in sentences ending with "?". Dev recall@5 / @10 (harness over the same
    # memories): English 0.798 / 0.859 → 0.810 / 0.865; Korean memory (ko 30) 0.710 / 0.822 → 0.743 / 0.841;
    # Korean questions over English memory 0.634 / 0.755 → 0.674 / 0.763; English questions over Korean memory
    # 0.567 / 0.679 → 0.605 / 0.705; the three conversations in one memory 0.790 / 0.848 → 0.798 / 0.854. Flat
    # from 0.10 to 0.30 (English @10 0.863–0.865, ko 30 0.836–0.841); counting only the share above 0.3 gained less.
    r_question: float = 0.15
    # For a why or how question (gieok.retrieval.explain_words), an assistant's reply takes the relevance of the user's
    # message beside it in its session when its own is at least this share of that message's and it says as much
    # (gieok.retrieval.exchange); 0 turns it off. First results right over agent sessions, local model (13 questions on
    # 5 sessions, Korean and English; 13 on 7 sessions written before the rule; 8 on 4 sessions written to find where it
    # fails, where the user's own message holds the fact and the reply goes on to other work): 7 / 8 / 7 → 12 / 13 / 7
    # (with exchange_times); the same at 0.8 and 0.95. For every question, not only why and how, it failed there: 13 /
    # 13 / 2. LoCoMo is untouched (every message is a user's). Any two messages, the longer one speaking for the pair
    # (by 1.2×), did not help people's chats: English dev 0.810 / 0.862 → 0.804 / 0.861, ko 30 0.739 / 0.836 → 0.729 /
    # 0.841 (recall@5 / @10; at share 0.95: 0.808 / 0.862 and 0.724 / 0.836).
    exchange_share: float = 0.9
    # Cosines of e5-style models sit in a narrow high band (unrelated text ≈ 0.7); `cos_floor` rescales
    # (cos − floor)/(1 − floor) so relevance spreads over 0..1. None: the embedding model's own floor
    # (`model_cos_floor`), since the band depends on the model; 0 keeps the raw cosine.
    cos_floor: float | None = None
    keep_threshold: float = 0.05
    # A row tied to the query by its cosine alone (no word, tag, title, date or substring) is shown beside the
    # first result only with at least this share of its score (gieok.retrieval.ranking). Over a few notes the
    # model puts every short text near every question: "다음 분기 예산" listed "We deploy on Tuesdays" (cosine
    # 0.835, over its pair's threshold) at a third of the budget note's score. `gieok bench notes`: unrelated
    # notes beside an answer 24 → 16 (set a) and 54 → 43 (set b), no answer lost; every dev set identical to
    # three decimals at 0.4 and at 0.5 (a chat row shares a word with most questions); at 0.5 set b lost two answers.
    cos_only_share: float = 0.4
    half_life: dict[str, float] = field(default_factory=lambda: dict(HALF_LIFE_DAYS))


RECIPES: dict[str, Recipe] = {
    "hybrid": Recipe("hybrid"),
    "vector": Recipe("vector", use_keywords=False, r_cos=1.0, r_bm25=0.0),
    "keyword": Recipe("keyword", use_vectors=False, r_cos=0.0, r_bm25=1.0, keep_threshold=0.0),
}


def get_recipe(name: str) -> Recipe:
    try:
        return RECIPES[name]
    except KeyError:
        from gieok.core.errors import ConfigError
        raise ConfigError(f"unknown search recipe {name!r}: choose one of {', '.join(sorted(RECIPES))} "
                          "(GIEOK_SEARCH_RECIPE)") from None


def with_overrides(recipe: Recipe, **changes: object) -> Recipe:
    return replace(recipe, **changes)  # type: ignore[arg-type]
