"""The map is true to the tree: every file, folder and function docs/ARCHITECTURE.md names exists where it
says, and the house stays in rooms of a size one can read (no module over 600 lines, no function over 80)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("judgeapp", "calibration")
LONGEST_FILE, LONGEST_FUNCTION = 600, 80

# `path/to/file.py` or `path/to/file.py: name, name` (a name may be `Class.method`), inside backticks.
REFERENCE = re.compile(r"`((?:[\w.-]+/)*[\w.-]+\.(?:py|html|toml|md|sh)|(?:[\w.-]+/)+)(?::\s*([\w., ]+))?`")


def _source_files():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def _resolve(reference: str) -> list[Path]:
    """Where a path the map names may stand: from the repository's root, from inside judgeapp/ (the map writes
    `judging/runs/units.py` for judgeapp/judging/runs/units.py), or, said of the package in its row
    (`runs/lifecycle.py` of judging, `core.py` of a mode, `server.py` of fakejudge), anywhere below."""
    direct = [ROOT / reference, ROOT / "judgeapp" / reference]
    if any(path.exists() for path in direct):
        return direct
    suffix = "/" + reference.rstrip("/")
    return [
        path for top in (*PACKAGES, "fakejudge", "templates") for path in (ROOT / top).rglob(Path(reference).name)
        if str(path).endswith(suffix)
    ]


def _defined(path: Path) -> set[str]:
    """The names a module defines at its top level, and its classes' methods."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):  # a method as `Class.method`, or by its name alone (`finalize`)
                methods = [item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
                names.update(methods, (f"{node.name}.{method}" for method in methods))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def test_every_file_and_function_the_map_names_is_in_the_tree():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    missing = []
    for match in REFERENCE.finditer(text):
        reference, names = match.group(1), match.group(2)
        found = [path for path in _resolve(reference) if path.exists()]
        if not found:
            missing.append(f"{reference}: no such file or folder")
            continue
        if not names or not reference.endswith(".py"):
            continue
        defined = set().union(*(_defined(path) for path in found))
        for name in (word.strip() for word in names.split(",")):
            if name and name not in defined:
                missing.append(f"{reference}: {name} is not defined there")
    assert not missing, "docs/ARCHITECTURE.md names what is not in the tree:\n" + "\n".join(missing)


def test_no_module_or_function_is_too_long_to_read():
    too_long = []
    for path in _source_files():
        text = path.read_text()
        relative = path.relative_to(ROOT)
        if (lines := len(text.splitlines())) > LONGEST_FILE:
            too_long.append(f"{relative}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (length := node.end_lineno - node.lineno + 1) > LONGEST_FUNCTION:
                    too_long.append(f"{relative}:{node.lineno} {node.name}: {length} lines")
    assert not too_long, f"over {LONGEST_FILE} lines a module or {LONGEST_FUNCTION} a function:\n" + "\n".join(too_long)
