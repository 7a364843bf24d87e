"""The judging core: plain Python, no Django. Prompts, reply parsing and the algorithms of every mode,
each taking a judge callable so that it can be tested with stub judges."""
