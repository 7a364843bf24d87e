"""`manage.py api-token create USERNAME [--name N]`: a token for the HTTP API, printed once (CONTRACT §3);
`list` and `revoke` beside it. Each creation and revocation is in the audit log, by `cli`."""

from django.contrib.auth import get_user_model

from judgeapp.api import selectors, services
from judgeapp.judging.cli import JudgeCommand
from judgeapp.judging.errors import InputError
from judgeapp.roles import READERS, has_role, user_roles


class ApiTokenCommand(JudgeCommand):
    help = "Create, list or revoke a user's tokens for the HTTP API (/api/v1/). A new token is printed once."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        create = actions.add_parser("create", help="make a token for USERNAME and print it (only this once)")
        create.add_argument("username", metavar="USERNAME", help="the user the token acts as, with their role")
        create.add_argument(
            "--name", default="", metavar="N", help="what the token is for, e.g. github-actions (default 'token')"
        )
        listing = actions.add_parser("list", help="list tokens (prefix, name, user, created, last used, revoked)")
        listing.add_argument("username", nargs="?", metavar="USERNAME", help="only this user's tokens")
        revoke = actions.add_parser("revoke", help="revoke a token by its prefix (as `list` shows it)")
        revoke.add_argument("prefix", metavar="PREFIX", help="the token's public prefix, e.g. ja_1a2b3c4d5e6f_…")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _create(self, options):
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise InputError(f"no user {options['username']!r}")
        if not user.is_active:
            raise InputError(f"user {user.username} is inactive; a token of theirs would be refused")
        row, token = services.api_token_create(user=user, name=options["name"])
        self.stdout.write(token)
        roles = ", ".join(sorted(user_roles(user))) or "no role"
        self.stderr.write(f"token {row.name!r} ({row.shown}) for {user.username} ({roles}); store it now, it is not shown again")
        if not has_role(user, *READERS):
            self.stderr.write(
                f"note: {user.username} is neither a reviewer nor a lead, so the API refuses the token (403) until they are"
            )

    def _list(self, options):
        tokens = selectors.token_list(username=options.get("username"))
        for token in tokens:
            used = token.last_used_at.strftime("%Y-%m-%d %H:%M") if token.last_used_at else "never"
            state = f"revoked {token.revoked_at:%Y-%m-%d %H:%M}" if token.revoked_at else "active"
            self.stdout.write(
                f"{token.shown}  {token.user.username}  {token.name}  created "
                f"{token.created_at:%Y-%m-%d %H:%M}  last used {used}  {state}"
            )
        self.stderr.write(f"{len(tokens)} token(s)")

    def _revoke(self, options):
        token = selectors.token_for_prefix(prefix=options["prefix"])
        if token is None:
            raise InputError(f"no token with prefix {options['prefix']!r} (see `manage.py api-token list`)")
        if services.api_token_revoke(token=token):
            self.stdout.write(f"revoked {token.shown} ({token.name}) of {token.user.username}")
        else:
            self.stdout.write(f"{token.shown} was already revoked")
