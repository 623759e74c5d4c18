"""Draft a schema file from the data: ``btts init FILE``.

The guidance's rules applied to a user's own file: which field is the time and how it is
written, which text fields name the entities that lead the key, whether the file is wide, the
pattern, key, GC rule and queries, each decision stated in a comment. Below the command line
(``btts_cli/init_command.py``); pure except for reading the bounded sample.
"""

from __future__ import annotations

from btts.draft.drafting import draft, review

__all__ = ["draft", "review"]
