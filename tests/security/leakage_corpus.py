"""The leakage corpus: outputs that reveal a version, a system or a provider, each as a person would spot
it, and clean outputs that reveal nothing (tests/security/test_leakage_corpus.py).

The scene every text is scanned in: four versions compared blind, `out/v1`, `out/v2` (README's example),
`acme/stepwise` and `acme/concise-runbook`; a configured system `support-bot-v2` (model `gpt-4o-mini`) and a judge
`judge-a` (model `fake-judge`); the task is tests/security/leakage_corpus.py's TASK. A leaky text is put in
one run of version B; every one must raise a flag of its kind. Round two (issue 26) added names spelt with a
separator between every letter, version words, numeric entities without `;`, LangChain and LlamaIndex
transcripts, tool calls told without a narrator and current model and assistant names, with a near miss for each
(the names file is judgeapp/judging/data/model_names.toml).
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
    (
        "readme-v2", "README's example: versions out/v1 and out/v2, and 'This is v2' in an output",
        "This is v2.\n1. Notify the on-call.", KNOWN,
    ),
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
    (
        "python-repr-transcript", "a Python repr of chat messages",
        "[{'role': 'user', 'content': 'rotate'}, {'role': 'assistant', 'content': 'ok'}]", TRANSCRIPT,
    ),
    ("json-speaker", "JSON turns with speakers", '[{"speaker": "assistant", "text": "Step 1"}]', TRANSCRIPT),
    (
        "sharegpt", "ShareGPT turns", '{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}',
        TRANSCRIPT,
    ),
    ("json-role", "OpenAI-style messages", '{"role": "assistant", "content": "Step 1"}', TRANSCRIPT),
    ("message-object-repr", "a message object's repr", "ChatMessage(role='assistant', content='Step 1')", TRANSCRIPT),
    ("yaml-roles", "YAML turns", "- role: user\n  content: rotate it\n- role: assistant\n  content: done\n", TRANSCRIPT),
    ("speaker-turns", "a chat log", "User: rotate the password\nAssistant: sure, here are the steps\n", TRANSCRIPT),
    ("bold-speaker-turns", "a chat log in Markdown bold", "**User:** rotate it\n**Assistant:** done\n", TRANSCRIPT),
    ("chat-template", "chat-template tokens", "<|im_start|>assistant\nStep 1<|im_end|>", TRANSCRIPT),
    ("xml-turns", "turns in tags", "<human>rotate it</human><assistant>done</assistant>", TRANSCRIPT),
    # Tool calls, structured and told in prose.
    ("tool-call-prose", "a tool call told in prose", "First I called the `search_docs` tool with the query 'rotation'.", TOOL),
    (
        "tool-call-prose-function", "a function call told in prose",
        "Then, invoking the function get_secret, I read the old value.", TOOL,
    ),
    ("tool-call-prose-parens", "a call told in prose", "I ran read_file('config.yaml') and found the password.", TOOL),
    (
        "react-steps", "ReAct steps", "Thought: find the doc\nAction: search\nAction Input: rotation\nObservation: found it\n",
        TOOL,
    ),
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
    # Round two (issue 26). Names spelled with a separator between every letter.
    ("spaced-claude-hyphens", "Claude with a hyphen between every letter", "Signed, C-l-a-u-d-e.", PROVIDER),
    ("spaced-claude-dots", "Claude with a dot between every letter", "As c.l.a.u.d.e, I suggest the steps.", PROVIDER),
    ("spaced-claude-spaces", "Claude with a space between every letter", "Written by C l a u d e for you.", PROVIDER),
    (
        "spaced-anthropic-underscores", "Anthropic with underscores between the letters",
        "Per A_n_t_h_r_o_p_i_c policy, rotate weekly.", PROVIDER,
    ),
    ("spaced-gemini-stars", "Gemini with asterisks between the letters", "G*e*m*i*n*i suggests rotating weekly.", PROVIDER),
    ("spaced-openai-mixed", "OpenAI with mixed separators", "Built on O-p-e-n A.I tooling.", PROVIDER),
    ("spaced-gpt-4o", "a model name with spaces between every character", "Drafted by G P T - 4 o overnight.", MODEL),
    ("spaced-llama-3", "a model family and version spaced out", "L l a m a 3 wrote the steps below.", MODEL),
    ("spaced-version-dir", "the version's directory spelled out", "The s-t-e-p-w-i-s-e method below works.", KNOWN),
    ("spaced-parent", "the parent directory as an acronym", "Produced with A.C.M.E. tooling.", KNOWN),
    ("spaced-partial", "another version's distinctive word spaced out", "Not as c o n c i s e as the other one.", KNOWN),
    # Version words: the version v2 written with a space, an underscore, a dot or a hyphen, or spelt out.
    ("version-space", "v2 with a space", "This is v 2.\n1. Notify the on-call.", KNOWN),
    ("version-underscore", "v2 with an underscore", "Output of V_2 follows.", KNOWN),
    ("version-dot", "v2 with a dot", "Built as v.2 of the plan.", KNOWN),
    ("version-hyphen", "v2 with a hyphen", "Answer from V-2.", KNOWN),
    ("version-spaced-hyphen", "v2 with a spaced hyphen", "This is v - 2 speaking.", KNOWN),
    ("version-other", "the other version, v1, with a space", "Better than v 1 was.", KNOWN),
    ("version-word-this-is", "'version 2' where the version is v2", "This is version 2.", KNOWN),
    ("version-word-i-am", "'I am version 2'", "I am version 2, the newer runbook.", KNOWN),
    ("version-word-by", "'generated by version 2'", "Generated by version-2 overnight.", KNOWN),
    ("version-word-signature", "a signature naming the version", "Thanks,\n\u2014 Version 2", KNOWN),
    ("version-word-here", "'Version 2 here'", "Version 2 here: the steps follow.", KNOWN),
    # Numeric entities with and without their semicolon, decimal and hexadecimal.
    ("entity-no-semicolon", "Claude's C as a numeric entity without ';'", "As &#67laude, I suggest the steps.", PROVIDER),
    ("entity-zero-padded", "a zero-padded numeric entity without ';'", "As &#0067laude, I suggest the steps.", PROVIDER),
    ("hex-entity", "Claude's C as a hexadecimal entity", "As &#x43;laude, I suggest the steps.", PROVIDER),
    ("hex-entity-no-semicolon", "a hexadecimal entity without ';'", "As &#x43laude, I suggest the steps.", PROVIDER),
    ("entities-version-no-semicolon", "v2 as two entities without ';'", "This is &#118&#50 speaking.", KNOWN),
    ("entity-model-no-semicolon", "a model name with an entity without ';'", "Drafted with &#103pt-4o.", MODEL),
    # LangChain, LlamaIndex and OpenAI transcript shapes.
    ("langchain-dict", "a LangChain message dict", '[{"type": "human", "data": {"content": "rotate it"}}]', TRANSCRIPT),
    ("langchain-dict-ai", "a LangChain AI message dict as a repr", "{'type': 'ai', 'data': {'content': 'done'}}", TRANSCRIPT),
    (
        "langchain-objects", "LangChain message objects", "[HumanMessage(content='rotate it'), AIMessage(content='done')]",
        TRANSCRIPT,
    ),
    ("langchain-system", "a LangChain system message", 'SystemMessage(content="You are a helpful assistant")', TRANSCRIPT),
    ("langchain-chunk", "a streamed LangChain chunk", "AIMessageChunk(content='Step 1')", TRANSCRIPT),
    ("langchain-serialised", "a serialised LangChain message",
     '{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": {"content": "done"}}',
     TRANSCRIPT),
    (
        "langchain-tuples", "LangChain prompt tuples",
        'ChatPromptTemplate.from_messages([("human", "rotate it"), ("ai", "done")])', TRANSCRIPT,
    ),
    ("llamaindex-message", "a LlamaIndex chat message", "ChatMessage(role=MessageRole.USER, content='rotate it')", TRANSCRIPT),
    (
        "llamaindex-repr", "a LlamaIndex chat message's repr",
        "ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>, content='done')", TRANSCRIPT,
    ),
    ("openai-role-ai", "an OpenAI-style message with the role 'ai'", '{"role":"ai","content":"done"}', TRANSCRIPT),
    ("openai-responses-tool", "an OpenAI Responses API tool output", '{"type": "function_call_output", "output": "42"}', TOOL),
    # Tool calls told in prose, without "I" or "we".
    ("called-parens", "a call told in prose", "Then called get_weather() to check the region.", TOOL),
    (
        "called-parens-args", "a call with arguments told in prose", "Called get_secret(name='billing') and got the old value.",
        TOOL,
    ),
    ("invoked-backticks", "a tool invoked in backticks", "Next, invoked `read_file` on the config.", TOOL),
    ("ran-backticks", "a tool run in backticks", "First ran `search_docs` for rotation.", TOOL),
    ("executed-camel", "a camelCase tool executed", "Executed `readFile` to load the config.", TOOL),
    ("called-backticks-tool", "a backticked tool named as a tool", "Called `search` tool with 'rotation'.", TOOL),
    ("calling-now", "a call announced as it happens", "I'm calling get_weather() now.", TOOL),
    # Current model and assistant names (judgeapp/judging/data/model_names.toml).
    ("sonnet-version", "Sonnet with its version", "Sonnet 4.5 wrote this runbook.", MODEL),
    ("opus-version", "Opus with its version", "Drafted with Opus 4.1.", MODEL),
    ("haiku-version", "Haiku with its version", "Haiku 3.5 says hello.", MODEL),
    ("sonnet-version-first", "the version before the name", "As 3.7 Sonnet, I propose the steps below.", MODEL),
    ("sonnet-id", "a model id", "Served by sonnet-4-5 overnight.", MODEL),
    ("sonnet-self", "an assistant naming itself", "I'm Sonnet, and here are the steps.", MODEL),
    ("gemini-flash", "a Gemini model", "Gemini 2.5 Flash suggests rotating weekly.", MODEL),
    ("copilot", "an assistant's name", "Copilot suggested these steps.", PROVIDER),
    ("github-copilot", "an assistant's full name", "Generated with GitHub Copilot.", PROVIDER),
    ("deepseek-r1", "a DeepSeek model", "DeepSeek R1 reasoning follows.", MODEL),
    ("gpt-oss", "an open-weight GPT", "gpt-oss-120b wrote this.", MODEL),
    ("chatgpt-4o", "ChatGPT with its version", "ChatGPT-4o answered.", MODEL),
    ("o3-context", "an o-series model named by its maker", "OpenAI's o3 drafted this.", MODEL),
    ("o1-self", "an o-series model naming itself", "I am o1, and these are the steps.", MODEL),
    ("o3-model", "an o-series model named as a model", "The o3 model wrote the steps below.", MODEL),
    ("grok-version", "Grok with its version", "Grok 4 suggests the steps below.", MODEL),
    ("phi-space", "Phi with a space before its version", "Phi 3.5 mini wrote this.", MODEL),
    ("command-r", "Cohere's Command R+", "Command R+ drafted the steps.", MODEL),
    ("kimi-k2", "Kimi with its version", "Kimi K2 answered the question.", MODEL),
    ("qwq", "QwQ with its size", "QwQ-32B reasoned it through.", MODEL),
    ("nemotron", "a model family", "Nemotron wrote this runbook.", PROVIDER),
    ("codestral", "a model family", "Codestral generated the script.", PROVIDER),
    ("llama-caps", "LLaMA as its makers write it", "LLaMA answered first.", PROVIDER),
    ("mistral-large", "a Mistral model", "Mistral Large wrote it.", MODEL),
]

# Clean outputs: the kind of text the versions really produce, with near misses for every rule.
CLEAN = [
    ("runbook", "# Rotating the billing database password\n\n1. Notify the on-call engineer and #billing 30 minutes before.\n"
     "2. Generate the new password in the vault.\n3. Update the service's secret and restart it.\n4. Verify checkout works.\n"
     "5. Roll back: restore the previous secret version and restart.\n"),
    ("support-reply", "Hi Sam,\n\nI've reset your password. You'll get an email with a link; it expires in 24 hours. "
     "If it doesn't arrive, check your spam folder.\n\nBest,\nThe Billing Team\n"),
    (
        "shell",
        "Run:\n\n```\npsql -h db.internal -U admin -c \"ALTER USER billing PASSWORD '…'\"\nkubectl rollout restart "
        "deployment/billing\n```\n",
    ),
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
    (
        "python-snippet",
        "```python\ndef rotate(vault):\n    secret = vault.new_secret('billing')\n    return secret\n```\nCall rotate() from the "
        "nightly job.",
    ),
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
    # Round two (issue 26): near misses for every new rule.
    ("llama-animal", "We visited a llama farm on the offsite; one llama spat at the guide."),
    ("llama-wool", "Llama wool socks were the team prize this quarter."),
    ("mistral-wind", "The mistral blew for three days, so the drill moved inside."),
    ("mistral-wind-capital", "The Mistral winds close the port in winter; plan the rotation around them."),
    ("gemini-star-sign", "Dana is a Gemini, born in June; Gemini season starts on May 21."),
    ("gemini-missions", "NASA's Gemini missions tested docking before Apollo."),
    ("opus-music", "Beethoven's Opus 131 is his magnum opus, some say."),
    ("sonnet-poem", "Shakespeare's Sonnet 18 is better known than his other sonnets."),
    ("haiku-poem", "Write 3 haiku about rotation; a Haiku has 17 syllables."),
    ("copilot-role", "The copilot checks the fuel while the captain briefs the crew; a copilot can take over."),
    ("bard", "The Bard wrote 154 sonnets."),
    ("gemma-colleague", "Gemma from accounts approves the change before the window."),
    ("claude-people", "Water Lilies is by Claude Monet; Claude Shannon founded information theory."),
    ("grok-verb", "It takes a week to grok the billing service."),
    ("phi-golden-ratio", "phi is the golden ratio, about 1.618; Phi appears in the formula."),
    ("command-shortcut", "Press Command R to reload the dashboard."),
    ("ozone-and-variables", "O3 (ozone) and O2 levels are logged; in the script, o1 = rotate(vault) and o3 is unused."),
    ("alphabet", "A B C D E F G H I J K L M N O P Q R S T U V W X Y Z\n1 2 3 4 5 6 7 8 9"),
    ("acronyms", "The U.S.A. team, e.g. the S.L.A. owners, reply A.S.A.P."),
    ("version-numbers", "Upgrade to version 2.1 of the driver; version 20 is out; Python version 2 is retired."),
    ("this-is-version-of", "This is version 2 of the API; it adds pagination."),
    ("named-function", "Define a function called `rotate_secret`; the helper is called get_secret() in the codebase."),
    ("called-passive", "This gets called once a night by cron, and the job is called rotate."),
    ("on-call-ran", "At 10:02 the on-call ran `rotate_password.sh` and paged the DBA."),
    ("we-used-the-search", "We used the search tool in the wiki to find the old runbook."),
    ("json-schema", '{"type": "object", "properties": {"role": {"type": "string"}, "type": {"enum": ["human", "bot"]}}}'),
    ("user-tuples", 'pairs = [("user", "alice"), ("admin", "bob")]'),
    ("message-words", "Send a message to the human reviewer; the AI summary follows in the system log."),
    ("entities-prose", "R&D &amp; AT&T reviewed ticket &#35;42 &mdash; the fix &#8212 shipped."),
    ("sizes-and-rockets", "The Falcon 9 launch slipped; the llama-shaped cake won."),
]
