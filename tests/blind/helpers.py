"""Version directories for blind-comparison tests, written the way users lay them out."""

from pathlib import Path

TASK = (
    "Write a runbook for rotating the database password of the billing service. Cover the steps in order, "
    "who to notify, how to roll back, and how to verify the billing service afterwards."
)
EXPECTATIONS = [
    "Lists the rotation steps in order",
    "Says how to roll back to the old password",
    "Names who to notify before the rotation",
]

STRONG = """# Billing database password rotation

## Notify
- Tell the on-call engineer and #billing-ops 30 minutes before the rotation.

## Steps
1. Create the new password in the vault: `vault write -f secret/billing/db/rotate`.
2. Set it on the database role: `ALTER ROLE billing WITH PASSWORD '<new>';`.
3. Update the billing service secret and restart the 3 pods one at a time.

## Roll back
1. Restore the old password from the vault's previous version and restart the pods.

## Verify
- The billing health check returns 200 and a test invoice appears within 2 minutes.
"""

MIDDLING = """# Password rotation

1. Notify the on-call engineer before the rotation.
2. Rotate the database password in the vault.
3. Update the billing service secret and restart it.
4. Roll back: restore the old password and restart.
5. Verify the billing service: health check returns 200.
"""

WEAK = "Change the password and restart things. Tell people.\n"

FAILED_RUN = "ERROR: the run was aborted after 300 s; no runbook was produced.\n"


def write_version(root: Path, name: str, runs: list[str] | None = None, *, single: str | None = None) -> Path:
    """A version directory: `runs` gives one runbook.md per run-N directory; `single` a version without runs."""
    directory = root / name
    directory.mkdir(parents=True)
    if single is not None:
        (directory / "runbook.md").write_text(single)
    for i, text in enumerate(runs or [], start=1):
        (directory / f"run-{i}").mkdir()
        (directory / f"run-{i}" / "runbook.md").write_text(text)
    return directory


def write_inputs(root: Path, *, expectations=EXPECTATIONS) -> tuple[Path, Path]:
    prompt = root / "task.md"
    prompt.write_text(TASK)
    expect = root / "expectations.txt"
    expect.write_text("\n".join(expectations) + "\n")
    return prompt, expect
