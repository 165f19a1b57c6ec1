"""Extraction: finished conversations become memories, by the rule-based extractor
(offline) or an LLM (the Anthropic SDK, on a worker thread, within budgets)."""
