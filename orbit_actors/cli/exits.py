"""The exit codes of ``orbit``, in one place so the help, the docs and the code agree.

========  ==============================================================================
code      meaning
========  ==============================================================================
0         it worked (``start --wait``: the execution completed; ``check``: every file is valid)
1         it did not: a failed, cancelled or timed-out execution, a definition with problems,
          or a refusal of the server (the line names the API's code)
2         the command line could not be parsed: an unknown command or flag, a missing
          argument, a value of the wrong type
3         the server could not be reached (nothing answered at ``--url``)
130       interrupted (Ctrl-C)
========  ==============================================================================
"""

from __future__ import annotations

from typing import Final

OK: Final = 0
FAILED: Final = 1
USAGE: Final = 2
UNREACHABLE: Final = 3
INTERRUPTED: Final = 130

EXIT_CODES_HELP: Final = (
    "Exit codes: 0 it worked; 1 a failed execution or check, or a refusal of the server;\n"
    "2 a usage error; 3 the server could not be reached."
)
