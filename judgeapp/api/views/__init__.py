"""The API's entry points: `base` (the NinjaAPI, the token check, errors as JSON), `endpoints` (runs,
reports, gates, judges) and `pages` (the profile page where a user makes and revokes tokens, the docs)."""
