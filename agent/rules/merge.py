"""Rule 4: one subject, one increment — whatever documents, sections or table rows it came from.

Two claims are one subject when they name one paper (arXiv ID), one advisory (CVE ID) or one
release (a product and its version), when two documents cite one link, when one document tells
one release or one anchored subject in two items of one § section, or when two documents give
it nearly the same title. Claims naming two different releases of a product stay apart however
alike their titles are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.core.names import Product, one_product, product_name, product_word, release_version, squashed
from agent.core.text import similarity, subject_head
from agent.plan.anchors import normalise_url
from agent.rules.claims import Candidate, Finding, Group
from schemas.extraction import Claim

MERGE_SIMILARITY = 0.6

_VERSION = r"(?:v?\d+(?:\.\d+){1,3}|v\d+)(?![A-Za-z0-9_.-])"
_NAME = r"[@A-Za-z][A-Za-z0-9_.+/@-]*[A-Za-z0-9]"
_NAMED_VERSION = re.compile(rf"(?<![A-Za-z0-9])({_NAME})\s?({_VERSION})", re.I)
_LEAD_NAME = re.compile(rf"(?<![A-Za-z0-9])({_NAME})")
_CVE = re.compile(r"CVE-\d{4}-\d{4,7}", re.I)


@dataclass(frozen=True)
class Subject:
    """What a claim says its subject is, read once: its release, advisories, links and lead name."""

    claim: Candidate
    release: tuple[Product, str] | None
    advisories: frozenset[str]
    urls: frozenset[str]
    lead: Product

    @classmethod
    def of(cls, c: Candidate) -> Subject:
        urls = frozenset(normalise_url(u) for u in c.claim.urls)
        return cls(c, release_of(c.claim), frozenset(advisories(c.claim)), urls, lead_words(c.claim))


def merge(cands: list[Candidate]) -> tuple[list[Group], list[Finding]]:
    """A claim joins the first group (in the order groups were opened) holding a claim of the
    same subject; members are ordered strongest first, so the lead names the increment."""
    groups: list[list[Subject]] = []
    findings: list[Finding] = []
    for c in cands:
        s = Subject.of(c)
        home = next((g for g in groups if any(same_subject(s, o) for o in g)), None)
        if home is None:
            groups.append([s])
            continue
        home.append(s)
        first = home[0].claim
        why = f"same subject as {first.claim.title!r} ({first.doc.path})"
        findings.append(Finding("merge", c.claim.title, c.doc.path, "merged", why, ref=c.ref, target=str(first.ref)))
    members = [sorted((s.claim for s in g), key=lambda c: (-c.claim.stars, c.order)) for g in groups]
    return [Group(tuple(m)) for m in members], findings


def same_subject(x: Subject, y: Subject) -> bool:
    a, b = x.claim, y.claim
    if a.arxiv_keys & b.arxiv_keys or x.advisories & y.advisories:
        return True  # one paper, one advisory (whatever releases fix it)
    if x.release and y.release:  # two releases: one when product and version agree, whatever else they share
        return same_release(x.release, y.release)
    if a.doc.path == b.doc.path:
        return one_release(a, b)
    if x.urls & y.urls:
        return True
    if _two_products(x.lead, y.lead, a.claim.title, b.claim.title):
        return False  # 'FlashInfer …' / 'FlashAttention …', however alike the rest
    return similarity(a.claim.title, b.claim.title) >= MERGE_SIMILARITY


def release_of(claim: Claim) -> tuple[Product, str] | None:
    """(product, version) a claim is about, normalised: the version written right after the name
    its title leads with ('vLLM v0.23.0 移除…'), else right after that name in its text or a link."""
    head = subject_head(claim.title)
    if _NAMED_VERSION.search(head):
        return title_release(claim.title)
    lead = _LEAD_NAME.search(head)
    if lead is None or len(lead[1]) < 2:
        return None
    name = product_word(lead[1])
    texts = [*(p.text for k in claim.key_points for p in k.walk()), *claim.evidence]
    for text in texts:
        for m in _NAMED_VERSION.finditer(text):
            if one_product((name,), (product_word(m[1]),)):
                return (name,), release_version(m[2])
    for url in claim.urls:  # a release page or the docs of one version: '…vllm…/v0.23.0/…'
        if squashed(name) in _letters(url) and (m := re.search(r"/(v?\d+(?:\.\d+){1,3})(?:/|$)", url)):
            return (name,), release_version(m[1])
    return None


def lead_product(claim: Claim) -> str:
    """The name a title leads with, normalised ('vLLM KV Pin API' -> 'vllm')."""
    m = _LEAD_NAME.match(subject_head(claim.title))
    return product_word(m[1]) if m else ""


def title_release(title: str) -> tuple[Product, str] | None:
    """The release a title leads with: 'vLLM v0.23.0 移除…' -> (('vllm',), '0.23'); after a colon
    too ('Recap: A2A v1.0 …')."""
    for head in dict.fromkeys([subject_head(title), *re.split(r"[:：]\s*", title, maxsplit=1)[1:2]]):
        if (m := _NAMED_VERSION.search(head)) and re.fullmatch(r"[A-Za-z0-9@/._+\s-]*", head[: m.start()]):
            return product_name(f"{head[: m.start()]} {m[1]}"), release_version(m[2])
    return None


def same_release(a: tuple[Product, str] | None, b: tuple[Product, str] | None) -> bool:
    """One version of one product (`one_product`: 'openai-agents 0.16.0', 'OpenAI Agents SDK 0.16')."""
    return bool(a and b and a[1] == b[1] and one_product(a[0], b[0]))


def _contains(a: Product, b: Product) -> bool:
    """One run of words inside the other: 'NVIDIA Dynamo KVBM' and 'Dynamo KVBM'."""
    short, long = sorted((a, b), key=len)
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


def _two_products(la: Product, lb: Product, title_a: str, title_b: str) -> bool:
    """Both titles lead with a name, the names differ, and neither title names the other's."""
    if not la or not lb or one_product(la, lb) or _contains(la, lb):
        return False
    ta, tb = _letters(title_a), _letters(title_b)
    return not any(squashed(w) in tb for w in la) and not any(squashed(w) in ta for w in lb)


def lead_words(claim: Claim) -> Product:
    """The run of Latin words a title leads with, normalised ('NVIDIA Dynamo KVBM 新增…' ->
    ('nvidia', 'dynamo', 'kvbm')); empty when the title leads with other script."""
    m = re.match(r"([A-Za-z][A-Za-z0-9_.+/@-]*(?:\s+[A-Za-z][A-Za-z0-9_.+/@-]*)*)", subject_head(claim.title))
    return product_name(m[1]) if m else ()


def advisories(claim: Claim) -> set[str]:
    """The CVE IDs a claim states, in its title or its key points."""
    texts = [claim.title, *(p.text for k in claim.key_points for p in k.walk())]
    return {m.upper() for t in texts for m in _CVE.findall(t)}


def _letters(text: str) -> str:
    """A title or a link as one run of lower-case letters and digits, to find a name's `squashed`
    words in it whatever separates them there."""
    return re.sub(r"[^a-z0-9@/]", "", text.lower())


_TOP_SECTION = re.compile(r"§\s*([^\d§；;，,]*?)\s*(\d+)|§\s*([^\s.．/§；;，,]+)")


def top_sections(section_ref: str) -> set[str]:
    """The top-level § labels a reference names: '§条目 1.1；§条目 1.5' -> {'条目1'},
    '§一.1' -> {'一'}, '§条目 1.2–1.4；§条目 3' -> {'条目1', '条目3'}."""
    return {f"{m[1].strip()}{m[2]}" if m[2] else m[3] for m in _TOP_SECTION.finditer(section_ref)}


def one_release(a: Candidate, b: Candidate) -> bool:
    """Two claims of one document and one top-level § are one subject when they tell one release
    or relate to one anchor (a model often splits a release from one of its features); unanchored
    ones must also name a like subject, since one § of a digest can hold unrelated items."""
    if not top_sections(a.claim.section_ref) & top_sections(b.claim.section_ref):
        return False
    ra = release_of(a.claim) or release_of(b.claim)
    if ra and all(one_product((lead_product(c.claim),), ra[0][-1:]) for c in (a, b)):
        return True  # one release told as several items of one section
    if a.anchor is not None or b.anchor is not None:
        return a.anchor is not None and b.anchor is not None and a.anchor.key == b.anchor.key
    return similarity(subject_head(a.claim.title), subject_head(b.claim.title)) >= MERGE_SIMILARITY


def short_subject(title: str) -> str:
    """The subject of an increment title as 三 and 一 name it: before its dash, full-width colon
    or parenthesis, at most 30 characters."""
    head = re.split(r"\s+[—–-]+\s+|——|：|（|\(", title, maxsplit=1)[0].strip()
    if len(head) <= 30:
        return head
    cut = head[:30]
    space = cut.rfind(" ")
    return (cut[:space] if space > 10 and head[30].isascii() and head[30].isalnum() else cut).strip()
