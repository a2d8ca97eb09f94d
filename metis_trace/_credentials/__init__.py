"""The shared credential detector (specs/secrets.md).

`find_credentials(text)` lists the credentials in a text as non-overlapping
`CredentialFinding(family, start, end)` spans, sorted. The runtime's
redactor replaces them; the TRACE-2 check looks for them in the files a run
wrote. The rules are our own, written from the formats' documentation and
from the shapes gitleaks and detect-secrets look for (sources per family in
`FAMILIES` and specs/secrets.md).

Three things every rule respects:
- escapes do not hide a credential: where the text holds backslash escapes
  (`\\u0041KIA...`, `https:\\/\\/u:p@h`, `\\n` inside a PEM block), the text is
  also scanned with them decoded (up to three levels deep), and what is
  found there is mapped back to the original span;
- a cut does not hide one: a private key without its END line is found to
  the end of its body, an END line without its BEGIN from the start of its
  body, so a truncated text never shows a key's body unflagged;
- everything is ASCII: the rules match ASCII only (`re.ASCII`), so a JSON
  encoder's escapes of other characters cannot split a match, and
  `may_hold_credential` can screen JSON text by plain substrings.

Every rule runs in linear time (no nested or adjacent unbounded repeats).

Where each part is (one module a part):
- `_families.py`: `CredentialFinding`, `CredentialFamily` and `FAMILIES`;
- `_names.py`: which names of fields and variables are secret
  (`secret_name`, `secret_values`), and the scan of the value given to one;
- `_rules.py`: the rules, one or more a family (needles and a scan);
- `_encoded.py`: which base64 runs are decoded (`ENCODED_FORMS`);
- `_escapes.py`: the views of a text with backslash escapes decoded;
- `_screen.py`: `may_hold_credential`, the fast screen of a JSON text;
- `_scanner.py`: `CredentialScanner`, `find_credentials`, `redact_credentials`.
"""

from ._encoded import ENCODED_FORMS
from ._encoded import ENCODED_NEEDLES
from ._encoded import encoded_screen
from ._encoded import literal_forms
from ._families import FAMILIES
from ._families import FAMILY_NAMES
from ._families import CredentialFamily
from ._families import CredentialFinding
from ._names import MIN_SECRET_LEN
from ._names import secret_name
from ._names import secret_values
from ._scanner import ENCODING_DEPTH  # read in `_scanner` at each `find`: set it there
from ._scanner import CredentialScanner
from ._scanner import find_credentials
from ._scanner import redact_credentials
from ._scanner import replace_spans
from ._screen import NAME_WORDS
from ._screen import RULE_NEEDLES
from ._screen import SCREEN_NEEDLES
from ._screen import may_hold_credential

__all__ = [
    "ENCODED_FORMS",
    "ENCODED_NEEDLES",
    "ENCODING_DEPTH",
    "FAMILIES",
    "FAMILY_NAMES",
    "MIN_SECRET_LEN",
    "NAME_WORDS",
    "RULE_NEEDLES",
    "SCREEN_NEEDLES",
    "CredentialFamily",
    "CredentialFinding",
    "CredentialScanner",
    "encoded_screen",
    "find_credentials",
    "literal_forms",
    "may_hold_credential",
    "redact_credentials",
    "replace_spans",
    "secret_name",
    "secret_values",
]
