"""Writes and orchestration. Keyword-only, typed functions named <entity>_<action>."""
