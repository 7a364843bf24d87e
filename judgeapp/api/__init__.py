"""The HTTP API for CI and scripts (docs/api.md): tokens per user, runs started over HTTP with the same
services as the CLI and the pages, their status, reports and gate."""
