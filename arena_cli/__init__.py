"""arena-cli: trustworthy leaderboards from pairwise LLM vote logs.

Library first: every command of the ``arena`` CLI is a call into these modules. Heavy modules
(statsmodels, tiktoken, scipy) are imported where they are used, so ``import arena_cli`` stays cheap.
"""

__version__ = "0.1.0"
