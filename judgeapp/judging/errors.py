class InputError(ValueError):
    """Bad input from a user (a file, a flag, a form): one line that says what to fix, never a traceback.
    The CLI prints it and exits 2; the browser shows it beside the form. Nothing has been stored."""
