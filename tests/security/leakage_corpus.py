"""The leakage corpus: outputs that reveal a version, a system or a provider, each as a person would spot
it, and clean outputs that reveal nothing (tests/security/test_leakage_corpus.py).

The scene every text is scanned in: four versions compared blind, `out/v1`, `out/v2` (README's example),
`acme/stepwise` and `acme/concise-runbook`; a configured system `support-bot-v2` (model `gpt-4o-mini`) and a judge
`judge-a` (model `fake-judge`); the task is tests/security/leakage_corpus.py's TASK. A leaky text is put in
one run of version B; every one must raise a flag of its kind.
"""

VERSIONS = ["out/v1", "out/v2", "acme/stepwise", "acme/concise-runbook"]
SYSTEMS = [("support-bot-v2", "gpt-4o-mini")]
JUDGES = [("judge-a", "fake-judge")]
TASK = (
    "Write a runbook for rotating the database password of the billing service. Cover the steps in order, who to "
    "notify before and after, how to roll back if the new password fails, and how to verify the service."
)

KNOWN = "known_name"
PROVIDER = "provider_name"
MODEL = "model_name"
TRANSCRIPT = "transcript"
TOOL = "tool_call"
RAW = "raw_output"
SKILL = "skill_path"
PATH = "file_path"
LABEL = "label_key"

# (id, what a person sees, the text, the flag kind expected)
LEAKY = [
    # The version's own names: the README's example first.
    ("readme-v2", "README's example: versions out/v1 and out/v2, and 'This is v2' in an output", "This is v2.\n1. Notify the on-call.", KNOWN),
    ("other-version-v1", "another version's short name", "Better than v1 was.", KNOWN),
    ("version-path", "the version's directory with its parent", "Written for out/v2 of the comparison.", KNOWN),
    ("slash-name", "acme/stepwise as written", "Produced by acme/stepwise.", KNOWN),
    ("em-dash-name", "acme—stepwise, an em dash for the slash", "Produced by acme—stepwise.", KNOWN),
    ("spaced-name", "acme - stepwise", "Produced by acme - stepwise.", KNOWN),
    ("split-over-lines", "the name broken over two lines", "This runbook comes from acme/\nstepwise, as planned.", KNOWN),
    ("split-system-name", "the system's name hyphenated over two lines", "Drafted by support-bot-\nv2 overnight.", KNOWN),
    ("partial-name", "the distinctive word of a version's name", "The stepwise approach below works.", KNOWN),
    ("partial-other-version", "another version's distinctive word", "Not as concise as the other one.", KNOWN),
    ("reversed-name", "the directory name spelt backwards", "Signed: esiwpets", KNOWN),
    ("reversed-system", "the system's name spelt backwards", "Signed: 2v-tob-troppus", KNOWN),
    ("reordered-name", "the name's words in the other order", "This is stepwise acme output.", KNOWN),
    ("underscored-system", "the system's name with underscores and capitals", "From Support_Bot_V2.", KNOWN),
    ("spaced-system", "the system's name with spaces", "From Support Bot V2.", KNOWN),
    ("camel-system", "the system's name run together", "From SupportBotV2.", KNOWN),
    ("dotted-system", "the system's name with a dot between each letter", "From s.u.p.p.o.r.t bot v2.", KNOWN),
    ("homoglyph-system", "a Cyrillic S in the system's name", "From \u0405upport-bot-v2.", KNOWN),
    ("zero-width-system", "zero-width spaces inside the system's name", "From sup\u200bport-bot\u200c-v2.", KNOWN),
    ("html-entity-name", "v2 written with an HTML entity", "This is &#118;2 speaking.", KNOWN),
    ("percent-encoded-name", "the version path percent-encoded", "See out%2Fv2 for details.", KNOWN),
    ("fullwidth-name", "v2 in fullwidth letters", "This is \uff56\uff12.", KNOWN),
    # Providers and model families, bare: a class of their own.
    ("claude", "a bare provider name", "As Claude, I suggest the steps below.", PROVIDER),
    ("openai", "a bare provider name", "Generated with OpenAI tooling.", PROVIDER),
    ("open-ai-spaced", "OpenAI written as two words", "Generated with Open AI tooling.", PROVIDER),
    ("anthropic", "a bare provider name", "Anthropic's guidelines say so.", PROVIDER),
    ("gpt", "a bare model family", "GPT wrote this answer.", PROVIDER),
    ("llama", "a bare model family", "Our Llama setup answered.", PROVIDER),
    ("gemini", "a bare model family", "Gemini suggests rotating weekly.", PROVIDER),
    ("mistral-qwen", "two families at once", "Compared with Mistral and Qwen, this is shorter.", PROVIDER),
    ("homoglyph-claude", "Claude with a Cyrillic C", "As \u0421laude, I suggest the steps below.", PROVIDER),
    ("zero-width-claude", "Claude with a zero-width space", "As Cla\u200bude, I suggest the steps.", PROVIDER),
    ("entity-claude", "Claude with its C as an HTML entity", "As &#67;laude, I suggest the steps.", PROVIDER),
    ("percent-claude", "Claude with its C percent-encoded", "As %43laude, I suggest the steps.", PROVIDER),
    ("double-percent-claude", "Claude percent-encoded twice", "As %2543laude, I suggest the steps.", PROVIDER),
    ("accented-anthropic", "Anthropic with an accent", "Per \u00c1nthropic's policy.", PROVIDER),
    ("model-name", "a full model name", "Drafted with gpt-4o-mini at temperature 0.", MODEL),
    ("model-claude-sonnet", "a full model name", "Claude 3.5 Sonnet says hello.", MODEL),
    # Transcripts in every common shape.
    ("python-repr-transcript", "a Python repr of chat messages", "[{'role': 'user', 'content': 'rotate'}, {'role': 'assistant', 'content': 'ok'}]", TRANSCRIPT),
    ("json-speaker", "JSON turns with speakers", '[{"speaker": "assistant", "text": "Step 1"}]', TRANSCRIPT),
    ("sharegpt", "ShareGPT turns", '{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}', TRANSCRIPT),
    ("json-role", "OpenAI-style messages", '{"role": "assistant", "content": "Step 1"}', TRANSCRIPT),
    ("message-object-repr", "a message object's repr", "ChatMessage(role='assistant', content='Step 1')", TRANSCRIPT),
    ("yaml-roles", "YAML turns", "- role: user\n  content: rotate it\n- role: assistant\n  content: done\n", TRANSCRIPT),
    ("speaker-turns", "a chat log", "User: rotate the password\nAssistant: sure, here are the steps\n", TRANSCRIPT),
    ("bold-speaker-turns", "a chat log in Markdown bold", "**User:** rotate it\n**Assistant:** done\n", TRANSCRIPT),
    ("chat-template", "chat-template tokens", "<|im_start|>assistant\nStep 1<|im_end|>", TRANSCRIPT),
    ("xml-turns", "turns in tags", "<human>rotate it</human><assistant>done</assistant>", TRANSCRIPT),
    # Tool calls, structured and told in prose.
    ("tool-call-prose", "a tool call told in prose", "First I called the `search_docs` tool with the query 'rotation'.", TOOL),
    ("tool-call-prose-function", "a function call told in prose", "Then, invoking the function get_secret, I read the old value.", TOOL),
    ("tool-call-prose-parens", "a call told in prose", "I ran read_file('config.yaml') and found the password.", TOOL),
    ("react-steps", "ReAct steps", "Thought: find the doc\nAction: search\nAction Input: rotation\nObservation: found it\n", TOOL),
    ("tool-calls-json", "an OpenAI tool_calls record", '{"tool_calls": [{"id": "call_1"}]}', TOOL),
    ("function-call-json", "a function name and arguments", '{"name": "get_secret", "arguments": "{}"}', TOOL),
    ("tool-use-repr", "an Anthropic tool_use block as a Python repr", "{'type': 'tool_use', 'name': 'read'}", TOOL),
    ("agent-log", "an agent's tool log", "⏺ Bash(psql -c 'select 1')", TOOL),
    # Raw API responses, skill and file paths, label keys.
    ("raw-json", "a raw API response", '{"finish_reason": "stop", "usage": {}}', RAW),
    ("raw-repr", "a raw API response as a Python repr", "ChatCompletion(id='chatcmpl-AbC123xyz', choices=[])", RAW),
    ("skill-path", "a skill path", "Following skills/runbooks/SKILL.md closely.", SKILL),
    ("home-path", "a home directory path", "Saved to /home/alice/evals/out.md", PATH),
    ("label-key", "a label key", "Produced by the with_skill configuration.", LABEL),
    ("config-line", "a configuration line", "model_name: gpt-4o\n", LABEL),
]

# Clean outputs: the kind of text the versions really produce, with near misses for every rule.
CLEAN = [
    ("runbook", "# Rotating the billing database password\n\n1. Notify the on-call engineer and #billing 30 minutes before.\n"
     "2. Generate the new password in the vault.\n3. Update the service's secret and restart it.\n4. Verify checkout works.\n"
     "5. Roll back: restore the previous secret version and restart.\n"),
    ("support-reply", "Hi Sam,\n\nI've reset your password. You'll get an email with a link; it expires in 24 hours. "
     "If it doesn't arrive, check your spam folder.\n\nBest,\nThe Billing Team\n"),
    ("shell", "Run:\n\n```\npsql -h db.internal -U admin -c \"ALTER USER billing PASSWORD '…'\"\nkubectl rollout restart deployment/billing\n```\n"),
    ("url-encoded-query", "See https://status.example.com/search?q=billing%20outage&page=2 for the incident history."),
    ("html-entities", "Use &lt;service&gt; &amp; &lt;region&gt; in the command, e.g. billing &amp; eu-west."),
    ("faq", "Q: How long does rotation take?\nA: About ten minutes.\nQ: Is there downtime?\nA: No.\n"),
    ("hardware", "System: Linux\nModel: ThinkPad X1\nMemory: 16 GB\n"),
    ("user-heading", "## User\nThe user opens Settings and picks Security.\n"),
    ("russian", "Спасибо за ваше сообщение. Мы сменили пароль базы данных и проверили работу сервиса."),
    ("greek-and-emoji", "Ευχαριστούμε! Done 👩\u200d💻 — the password was rotated ✅"),
    ("gpt-partition", "The new disk uses a GPT partition table; the database volume is /dev/sdb1."),
    ("markdown-table", "| step | owner |\n|---|---|\n| notify | on-call |\n| rotate | DBA |\n"),
    ("json-config", '{"timeout": 30, "retries": 3, "name": "billing", "region": "eu-west-1"}'),
    ("python-snippet", "```python\ndef rotate(vault):\n    secret = vault.new_secret('billing')\n    return secret\n```\nCall rotate() from the nightly job."),
    ("assistant-prose", "The user should ask the assistant manager to approve the change before the window."),
    ("percentages", "Traffic dropped 50% during the 10% canary; 100% of checks passed."),
    ("menu-path", "Open Settings > Accounts > Security and choose Rotate now."),
    ("version-words", "This applies to version 2 of the API and later; earlier versions are retired."),
    ("step-by-step", "Go step by step: each step is short, and the whole rotation stays wise to errors."),
    ("email-signature", "Thanks,\nDana — Billing SRE\nPager: +1 555 0100\n"),
    ("csv-like", "case,owner,done\nrotate,dba,yes\nverify,sre,yes\n"),
    ("cloud-words", "Our cloud provider's console shows the secret; claudication is a medical term, not ours."),
    ("api-path", "GET /api/users/42 returns 200 once the new password is live."),
    ("poem", "Old key to new key,\nquietly the service turns;\nno one sees the change."),
    ("use-the-tool", "Use the pg_dump tool to back up first, then run the migration."),
]
