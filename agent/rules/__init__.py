"""Rules: the deterministic layer — no LLM, pure functions, every decision explained.

One module per rule, in the order `chain` runs them: `grounding` (quotes, IDs, URLs, figures
against the document; arXiv IDs validated), `dedupe` (against what is already anchored; open
items settled), `merge` (one subject, one group), `edit` (each fact once, disputed figures
withheld, one credibility line), `select` (3–8 increments, sections, relevance), `verify`
(block 三). `claims` holds the values they pass along; `layout` words the outcome as the seven
blocks and `compose` is the two in a row. `injection` screens documents before any of them.
"""
