"""Leakage: what in a text would tell a reader which system, version or configuration produced it.

Shared by the blind comparator (judgeapp/blind/core/leakage.py scans every version, the eval prompt and the
expectations) and calibration (every item drawn into a sample is scanned before an annotator sees it).
Plain Python, no Django.

A person reading "Th&#105;s is v&#50;", "Сlaude" (a Cyrillic С) or "acme —\nstepwise" sees the name at
once, so every text is normalised before matching:

- HTML entities (`&#105;`, `&amp;`; numeric ones with or without their `;`: `&#67laude`) and percent-encoding
  (`%43laude`) are decoded, twice (double encoding);
- Unicode compatibility forms are folded (NFKC: fullwidth `ｖ２`, ligatures, superscripts), accents dropped,
  format characters removed (zero-width space and joiners, soft hyphens, bidi controls);
- common homoglyphs are folded to the Latin letter they imitate (Unicode's confusables, as shipped by the
  `confusable-homoglyphs` package: Cyrillic `а`, Greek `ο`, mathematical `𝐚`…), and case is ignored;
- for names, the separators `- _ / . \\ — * | · •` and every run of spaces and line breaks count as one space, so
  `support-bot-v2`, `Support_Bot_V2`, `acme/stepwise`, `acme—stepwise` and a name broken over two lines
  are the same name, and a name spelt with a separator between every letter (`s-t-e-p-w-i-s-e`, `V_2`) is found.

Model, model-family and assistant names come from one list, judgeapp/judging/data/model_names.toml
(judgeapp/judging/model_names.py matches them). Every pattern that reads a text either runs on RE2 or cannot
backtrack (literals, bounded classes), and no step compares a match with every other: a scan is linear in
the text (tests/security/test_leakage_speed.py).

Every match is mapped back to the original text: a flag names its rule, its place (the line of the
original text where the match starts) and the original line as its snippet.

The modules: `normalize` (the text as a person reads it), `names` (the names a version is known by and
their matcher), `scan` (the rules, the flags, `scan_texts`).
"""
