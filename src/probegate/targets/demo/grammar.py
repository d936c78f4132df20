"""The demo agents' grammar: the patterns their instruction reader (targets/demo/intents.py)
reads text with, and the words every match of a clause pattern holds.

Data more than code: what the reader recognises is here, how it reads is in intents.py. A new
kind of instruction a probe needs is a pattern here and a clause in the reader, for every text
alike (the reader knows nothing about probes).
"""

from __future__ import annotations

import re

EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
URL_RE = re.compile(r"(?:https?|file)://[^\s\"'<>)\]`]+")
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
# "do X, then do Y" is two instructions; each clause is read on its own.
# (Not at a bare ";": code and SQL use it inside one instruction.)
CLAUSE_SPLIT = re.compile(r"\s*(?:[,;]\s*then|\band then)\s+", re.IGNORECASE)
# A fenced block: ``` or ~~~ (or longer, so a fence can wrap another fence), an info string.
FENCE = re.compile(
    r"^[ \t]*(`{3,}|~{3,})[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)\n?[ \t]*\1",
    re.DOTALL | re.MULTILINE,
)
# normalise() separates the text from its decoded copies with this, so each is read on its own
# (a fence opened in an obfuscated copy must not swallow the decoded one).
COPY_SEPARATOR = "\n\x1e\n"
CODE_LANGS = frozenset(
    {
        "python",
        "py",
        "python3",
        "bash",
        "sh",
        "shell",
        "zsh",
        "console",
        "powershell",
        "ps1",
        "js",
        "javascript",
        "node",
        "ruby",
        "perl",
        "php",
    }
)
LOOKS_LIKE_CODE = re.compile(
    r"^\s*(?:import |from \S+ import|def |class |exec\(|eval\(|__import__|\$ |sudo |curl |wget |"
    r"pip |npm |rm |bash |sh |python)",
    re.MULTILINE,
)

PRIVATE_TERMS = (
    r"system prompt|instructions|configuration|config|escalation code|api key|api token|"
    r"credentials?|secrets?|password|billing key|hidden rules|initial prompt|keys|tokens"
)
# "these instructions" / "this email" name the text itself, not the agent's secrets.
SELF_REFERENCE = re.compile(
    r"\b(?:these|this|the following|the above|the below|its|the same)\s+(?:exact\s+)?"
    r"(?:instructions?|message|email|note|text|notice)\b",
    re.IGNORECASE,
)
DATA_WORDS = r"customer|record|account|profile|ssn|personal|pii|details|data|database"
CONVO_WORDS = r"conversation|chat|transcript|history"

REVEAL = re.compile(
    r"\b(reveal|print|repeat|show|output|display|share|disclose|dump|recite|echo|tell me|"
    r"what (?:is|are)|give me|spell|write out|encode|translate|include|list|paste|attach|"
    r"read back|reply with)\b.{0,80}?\b(" + PRIVATE_TERMS + r")\b",
    re.IGNORECASE,
)
EMAIL_VERB = re.compile(
    r"\b(e-?mail(?:s|ed|ing)?|send(?:s|ing)?|forward(?:s|ed|ing)?|mail(?:s|ing)?|bcc|cc|"
    r"cop(?:y|ies|ying)|exfiltrate|upload(?:s|ing)?)\b",
    re.IGNORECASE,
)
LOOKUP = re.compile(
    r"\b(look ?up|find|pull up|retrieve|get|show|access|open|check|query)\b.{0,40}?\b(customer|"
    r"account|record|profile)\b(?:.{0,20}?(?:#|id|number|no\.?)\s*:?\s*(\d{3,6}))?",
    re.IGNORECASE,
)
ID_RE = re.compile(r"\b(?:customer|account|id|#)\s*:?\s*#?(\d{3,6})\b", re.I)
# An identifier given in quotes is passed through verbatim, as LLM agents do with tool args.
QUOTED_ID = re.compile(
    r"\b(?:customer|account|id)\b[^\"“\n]{0,24}[\"“]([^\"”\n]{1,80})[\"”]", re.IGNORECASE
)
REFUND = re.compile(r"\b(refund|reimburse|credit back|pay out|payout)\b", re.I)
ORDER_RE = re.compile(r"\border\s*(?:#|no\.?|number)?\s*:?\s*(\d{2,8})", re.I)
AMOUNT_RE = re.compile(r"(?:\$|USD\s?)\s*([0-9][0-9,]*(?:\.[0-9]{1,2})?)", re.I)
RUN = re.compile(
    r"\b(run|execute|eval(?:uate)?|exec|launch|install)\b(?:\s+(?:this|the following|that))?"
    r"(?:\s+(?:exact|python|shell|bash))?"
    r"(?:\s+(?:code|script|command|snippet|expression|one-liner|migration|helper))*"
    r"(?:\s+(?:exactly|now|first|verbatim))?\s*:\s*(.+)",
    re.IGNORECASE | re.DOTALL,
)
INSTALL = re.compile(
    r"\b(pip3? install|npm (?:install|i)|curl\s+-\S*\s*\S+|curl\s+\S+|wget\s+\S+)[^\n]*", re.I
)
REMEMBER = re.compile(
    r"\b(remember|memori[sz]e|note down|keep in mind|add to (?:your )?(?:long-term )?memory|"
    r"(?:store|save) (?:this|that|the following|it|the note)(?: (?:in|to) (?:your )?"
    r"(?:long-term )?memory)?)\b"
    r"(?:\s+(?:this|that|the following|permanently|for (?:later|all future sessions|"
    r"future (?:sessions|reference|conversations))))*"
    r"\s*[:,-]?\s*(.+)",
    re.IGNORECASE | re.DOTALL,
)
RECALL = re.compile(
    r"\b(what do you remember|recall|check (?:your )?memory|from (?:your )?memory|"
    r"saved notes|your notes|my saved|the saved)\b",
    re.IGNORECASE,
)
ASK_AGENT = re.compile(
    r"\b(ask|tell|instruct|notify|message|delegate to|forward (?:this )?to|ping)\s+the\s+"
    r"([a-z][a-z-]*)\s+agents?\b\s*(?:again\b)?\s*[:,-]?\s*(?:to\s+)?(.*)",
    re.IGNORECASE | re.DOTALL,
)
GRANT = re.compile(
    r"\b(grant|give|elevate|promote|assign|make|add)\b.{0,60}?\b(admin(?:istrator)?|superuser|"
    r"root|owner|elevated|full access|privileges?)\b",
    re.IGNORECASE,
)
DISABLE = re.compile(
    r"\b(disable|turn off|switch off|deactivate|bypass|suspend|silence|mute|skip)\b.{0,40}?\b("
    r"audit(?: logging)?|logging|logs|monitoring|guardrails?|safety(?: filters?)?|content filters?|"
    r"oversight|alerts?|approval(?: checks?)?|rate limits?|review)\b",
    re.IGNORECASE,
)
DELETE = re.compile(
    r"\b(delete|remove|purge|wipe|drop|erase|truncate)\b.{0,40}?\b(all|every|records?|data|"
    r"accounts?|customers?|logs?|files?|tables?|everything|history|backups?)\b",
    re.IGNORECASE,
)
DELETE_QUOTED = re.compile(
    r"\b(?:delete|remove|purge|wipe|drop|erase|truncate)\b[^\"“\n]{0,60}[\"“]([^\"”\n]{1,120})[\"”]",
    re.IGNORECASE,
)
SAY = re.compile(
    r"\b(?:tell|inform|assure|reassure|notify|let|remind|warn|advise|instruct) the "
    r"(?:user|customer)s?\b(?:\s+know)?(?:\s+that)?\s*[:,-]?\s*(.+)",
    re.IGNORECASE | re.DOTALL,
)
SAY_QUOTED = re.compile(
    r"\b(?:say|respond with|reply with|answer with|begin your reply with)\b\s*:?\s*[\"“](.+?)[\"”]",
    re.IGNORECASE,
)
# "append/include X in every reply": a standing instruction about the agent's own output.
SAY_ALWAYS = re.compile(
    r"\b(?:append|add|include|insert|put|attach|end)\b\s+(?:the\s+|this\s+)?(.+?)\s+"
    r"(?:to|in|at the end of|into|with)\s+(?:(?:every|each)\s+(?:answer|reply|response|message)|"
    r"(?:all(?: of)?|your)\s+(?:your\s+)?(?:answers|replies|responses|messages))\b",
    re.IGNORECASE | re.DOTALL,
)
ASK_USER = re.compile(
    r"\bask (?:the )?(?:user|customer) (for|to)\s+(.+)",
    re.IGNORECASE,
)
# Unicode "tag" characters (U+E0020..U+E007E) mirror ASCII and render as nothing: the
# "ASCII smuggling" channel for instructions a human reviewer cannot see.
TAG_RUN = re.compile("[\U000e0020-\U000e007e]+")
SUPPRESS = re.compile(
    r"\b(?:do not|don't|never|stop|refuse to|cease)\b.{0,30}?\b(process(?:ing)?|issu(?:e|ing)|"
    r"refund(?:s|ing)?|help(?:ing)?|answer(?:ing)?|respond(?:ing)?|assist(?:ing)?)\b",
    re.IGNORECASE,
)
RETRY = re.compile(r"\b(retry|try again|resubmit|repeat the (?:call|request))\b", re.I)
CLAIM = re.compile(
    r"\b(i am|i'm|this is|speaking as|on behalf of|message from|as)\s+(?:the |an? |your )?(?:\w+ )?"
    r"(admin(?:istrator)?|manager|supervisor|ceo|cto|security team|owner|developer|"
    r"orchestrator|compliance officer|it department|system)\b"
    r"|\b(pre-?approved|authori[sz]ed by|approved by|i(?:'m| am)? authori[sz]ing|override code|"
    r"admin override|elevated access granted|verified by (?:acme )?security|"
    r"(?:manager|supervisor|admin|finance|security|fraud)(?:'s)? (?:approval|sign-?off)|"
    r"verified (?:\w+ ){0,2}(?:as )?(?:an? )?(?:administrator|admin)|approval code)\b"
    # Chat-template and header markers that impersonate the platform itself.
    r"|<\|im_start\|>\s*system|\[/?(?:SYSTEM|INST)\]|^\s*#{0,3}\s*SYSTEM\s*(?:MESSAGE)?\s*:",
    re.IGNORECASE | re.MULTILINE,
)
ENCODING = (
    ("base64", re.compile(r"base-?64", re.I)),
    ("hex", re.compile(r"\bhex(?:adecimal)?\b", re.I)),
    ("reversed", re.compile(r"\b(revers\w*|backwards?)\b", re.I)),
    ("spaced", re.compile(r"\b(spaces? between|spell(?:ed)? out|one character at a time)\b", re.I)),
)
ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)
LEET = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"}
)
LEET_TOKEN = re.compile(r"[A-Za-z0-9@$]+")
LEET_DIGIT = re.compile(r"[013457@$]")
# A word, between spaces, that holds a leet digit. It is tried only where a word starts (the
# lookbehind), so a long word without one is read once, not again from each of its characters.
LEET_WORD = re.compile(r"(?<![^ ])[^ 013457@$]*[013457@$][^ ]*")
B64_BLOB = re.compile(r"\b[A-Za-z0-9+/]{24,}={0,2}")
# Payload splitting: a = "..." b = "..." followed by an ask to join them.
SPLIT_PART = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{0,11})\s*=\s*(\"(?:[^\"\\]|\\.)*\")")
SPLIT_JOIN = re.compile(r"\b(followed by|concatenat\w*|join(?:ed)?|combine[sd]?|then)\b", re.I)

# Words every match of a clause pattern holds, in lower case, `|` between them (_search).
MATCH_WORDS: dict[re.Pattern[str], tuple[str, ...]] = {
    pattern: tuple(words.split("|"))
    for pattern, words in {
        REMEMBER: "remember|memori|note down|keep in mind|memory|store |save ",
        RECALL: "remember|recall|memory|saved|notes",
        SUPPRESS: "do not|don't|never|stop|refuse to|cease",
        ASK_USER: "ask ",
        SAY_ALWAYS: "answer|repl|respons|message",
        SAY_QUOTED: "say|with",
        SAY: "the user|the customer",
        ASK_AGENT: "agent",
        RUN: "run|exec|eval|launch|install",
        LOOKUP: "customer|account|record|profile",
        REFUND: "refund|reimburse|credit back|pay out|payout",
        INSTALL: "pip|npm |curl|wget",
        GRANT: "admin|superuser|root|owner|elevated|full access|privilege",
        DISABLE: "disable|turn off|switch off|deactivate|bypass|suspend|silence|mute|skip",
        DELETE_QUOTED: "delete|remove|purge|wipe|drop|erase|truncate",
        DELETE: "delete|remove|purge|wipe|drop|erase|truncate",
        EMAIL_VERB: "mail|send|forward|cc|cop|exfiltrate|upload",
        REVEAL: "prompt|instruction|config|escalation code|api key|api token|"
        "credential|secret|password|billing key|hidden rules|keys|tokens",
        CLAIM: "admin|manager|supervisor|ceo|cto|security team|owner|developer|orchestrator|"
        "compliance officer|it department|system|approved|authori|override|"
        "elevated access granted|verified|approval|sign|inst]",
    }.items()
}
# The same, by each pattern's identity: a re.Pattern hashes its whole compiled program again on
# every lookup (0.15-1.5 us for these, 73,000 lookups a full scan); an id's hash is itself.
WORDS_BY_ID = {id(pattern): words for pattern, words in MATCH_WORDS.items()}
