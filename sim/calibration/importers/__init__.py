"""Parsers of what real servers print: vLLM's Prometheus metrics and SGLang's scheduler log.

Each parser is a pure function from text to a frozen result object; reading files lives in
thin ``read_*`` helpers (and the CLI), so the parsers are tested on strings.
"""
