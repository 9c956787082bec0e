#!/usr/bin/env python3
"""Every relative link in the repository's Markdown files points at a file that exists and,
with a #fragment, at a heading of that file (GitHub's anchors: lower case, punctuation
dropped, spaces to hyphens).

  python3 tests/workflow/doc_links.py
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


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


def main() -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "*.md"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    broken = []
    for f in files:
        path = ROOT / f
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
    if broken:
        print("FAIL: broken links:\n  " + "\n  ".join(broken), file=sys.stderr)
        sys.exit(1)
    print(f"doc_links: every relative link of {len(files)} Markdown files resolves")


if __name__ == "__main__":
    main()
