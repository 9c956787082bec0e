#!/usr/bin/env python3
"""Every relative link in the repository's Markdown files points at a file that exists and,
with a #fragment, at a heading of that file (GitHub's anchors: lower case, punctuation
dropped, spaces to hyphens). A Markdown file named in the text without a link (`see
DESIGN.md`, `kernels/README.md`) must exist too: beside the page, from the repository root,
or, for a bare name, anywhere in the repository.

  python3 tests/workflow/doc_links.py [--self-test]

`--self-test` checks the checker: a page that names or links a missing file is refused.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# A Markdown file named in text: a path of letters, digits, `_`, `-`, `.` and `/` ending in
# `.md`, not inside a longer word, a URL or a placeholder (`<...>.md`).
MENTION = re.compile(r"(?<![\w/.<>:-])((?:[\w.-]+/)*[\w-]+\.md)\b(?![\w/-])")


def anchors(path: Path) -> set[str]:
    out, seen = set(), {}
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        text = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(text, 0)
        seen[text] = n + 1
        out.add(text if n == 0 else f"{text}-{n}")
    return out


def broken_in(root: Path, f: str, names: set[str]) -> list[str]:
    """The broken links and mentions of the page `f` (relative to `root`); `names` are the
    file names of every Markdown file of the repository."""
    path = root / f
    broken = []
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("mailto:"):
            continue
        file_part, _, frag = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{f}: {target}")
            continue
        if frag and dest.suffix == ".md" and frag not in anchors(dest):
            broken.append(f"{f}: {target} (no such heading)")
    # Mentions outside links (whose targets were checked above).
    for name in MENTION.findall(LINK.sub("", text)):
        here = (path.parent / name).resolve()
        if here.exists() or (root / name).exists() or ("/" not in name and name in names):
            continue
        broken.append(f"{f}: {name} (named in the text, no such file)")
    return broken


def self_test() -> None:
    """The checker refuses a page that names or links a missing Markdown file, and accepts
    the same page once the file exists."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "docs").mkdir()
        (root / "docs" / "A.md").write_text("# A\n\nThe design is in DESIGN.md (\"Statistics\").\n"
                                            "See [B](B.md#b) and `kernels/README.md`.\n"
                                            "Not a file: https://example.com/X.md, `<gpu>.md`.\n")
        (root / "docs" / "B.md").write_text("# B\n")
        names = {"A.md", "B.md"}
        got = broken_in(root, "docs/A.md", names)
        want = ["docs/A.md: DESIGN.md (named in the text, no such file)",
                "docs/A.md: kernels/README.md (named in the text, no such file)"]
        if got != want:
            sys.exit(f"FAIL self-test: {got} != {want}")
        (root / "kernels").mkdir()
        (root / "kernels" / "README.md").write_text("# K\n")
        (root / "DESIGN.md").write_text("# D\n")
        got = broken_in(root, "docs/A.md", names | {"README.md", "DESIGN.md"})
        if got:
            sys.exit(f"FAIL self-test: {got} with every file present")
    print("doc_links self-test: a missing file, linked or named, is refused")


def main() -> None:
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.md"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    names = {Path(f).name for f in files}
    broken = []
    for f in files:
        broken += broken_in(ROOT, f, names)
    if broken:
        print("FAIL: broken links:\n  " + "\n  ".join(broken), file=sys.stderr)
        sys.exit(1)
    print(f"doc_links: every relative link of {len(files)} Markdown files resolves")


if __name__ == "__main__":
    main()
