"""Check the built documentation site, statically and in headless Chromium.

Run after the Sphinx build (``.ci/docs`` does)::

    python docs/check_site.py docs/_build/html [--screenshots DIR] [--no-browser]

Static checks, over every HTML page of the site:

* every internal link (``<a href>`` that is not ``http(s):``, ``mailto:`` or
  similar) points to a file of the site, and its ``#fragment``, if any, to an
  ``id`` of that page;
* every ``<img src>`` that is not a ``data:`` URI points to a file of the site;
* every executed notebook page (``notebooks/*.html`` but the index) shows cell
  outputs (myst-nb's ``cell_output`` blocks).

In the browser (``chromium --headless``), for the pages of :data:`PAGES`: a
screenshot of each is saved, and a page whose HTML holds maths must come back
from Chromium with MathJax's output (``mjx-container`` elements) in its DOM,
i.e. the maths rendered. Any failure is listed and the exit status is 1.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# The pages opened in the browser: the front page, getting started, one API page, one
# executed notebook and the gallery.
PAGES = (
    "index.html",
    "getting_started.html",
    "api/distributions.html",
    "notebooks/quickstart.html",
    "gallery.html",
)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


class _Page(HTMLParser):
    """Links, images, ids, output blocks and maths markers of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.images: list[str] = []
        self.ids: set[str] = set()
        self.outputs = 0
        self.maths = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "name" in a:
            self.ids.add(a["name"])
        if tag == "a" and "href" in a:
            self.links.append(a["href"])
        if tag == "img" and "src" in a:
            self.images.append(a["src"])
        classes = a.get("class", "").split()
        if "cell_output" in classes:
            self.outputs += 1
        if "math" in classes:
            self.maths += 1


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def _is_external(url: str) -> bool:
    scheme = urlsplit(url).scheme
    return bool(scheme) and scheme not in ("file",)


def static_checks(site: Path) -> tuple[list[str], dict[Path, _Page]]:
    """Broken internal links and anchors, missing images, notebook pages without outputs."""
    pages = {p: _parse(p) for p in sorted(site.rglob("*.html"))}
    problems: list[str] = []
    for path, page in pages.items():
        rel = path.relative_to(site)
        if rel.parts[0] in ("_static", "_sources", "_modules"):
            continue
        for href in page.links:
            if not href or _is_external(href) or href.startswith("javascript:"):
                continue
            parts = urlsplit(href)
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                problems.append(f"{rel}: broken link {href!r}")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    problems.append(f"{rel}: link {href!r} names a missing anchor")
        for src in page.images:
            if src.startswith("data:") or _is_external(src):
                continue
            target = (path.parent / unquote(urlsplit(src).path)).resolve()
            if not target.is_file():
                problems.append(f"{rel}: missing image {src!r}")
        if rel.parts[0] == "notebooks" and rel.name != "index.html" and page.outputs == 0:
            problems.append(f"{rel}: executed notebook page without any cell output")
    return problems, pages


def _browser() -> str | None:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def _chromium(browser: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
    profile = tempfile.mkdtemp(prefix="check_site_")
    try:
        return subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--allow-file-access-from-files",
             "--virtual-time-budget=15000", *args],
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def browser_checks(site: Path, pages: dict[Path, _Page], shots: Path) -> list[str]:
    """Screenshots of :data:`PAGES`, and rendered maths where a page has maths."""
    browser = _browser()
    if browser is None:
        return [f"no headless browser found (tried {', '.join(BROWSERS)})"]
    shots.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for name in PAGES:
        path = (site / name).resolve()
        if not path.exists():
            problems.append(f"{name}: page missing from the site")
            continue
        url = path.as_uri()
        shot = shots / (name.replace("/", "_").removesuffix(".html") + ".png")
        done = _chromium(browser, "--window-size=1280,1600", f"--screenshot={shot}", url)
        if done.returncode != 0 or not shot.is_file() or shot.stat().st_size == 0:
            problems.append(f"{name}: no screenshot ({done.stderr.strip()[-300:]})")
        else:
            print(f"screenshot {shot}")
        dom = _chromium(browser, "--dump-dom", url).stdout
        if not dom.strip():
            problems.append(f"{name}: Chromium returned an empty DOM")
            continue
        page = pages.get(path) or _parse(path)
        rendered = len(re.findall(r"<mjx-container", dom))
        if page.maths and not rendered:
            problems.append(
                f"{name}: {page.maths} maths elements in the HTML but no MathJax output "
                "(mjx-container) in the browser: the maths did not render"
            )
        else:
            print(f"{name}: {page.maths} maths elements, {rendered} rendered by MathJax")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, nargs="?", default=Path("docs/_build/html"))
    parser.add_argument("--screenshots", type=Path, default=None)
    parser.add_argument("--no-browser", dest="browser", action="store_false")
    args = parser.parse_args(argv)
    site = args.site.resolve()
    if not (site / "index.html").is_file():
        parser.error(f"{site} holds no index.html: build the site first (bash .ci/docs)")
    problems, pages = static_checks(site)
    print(f"{len(pages)} pages checked for links, images and notebook outputs")
    if args.browser:
        shots = args.screenshots or site.parent / "screenshots"
        problems += browser_checks(site, pages, shots)
    for line in problems:
        print(f"FAIL {line}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in the built site", file=sys.stderr)
        return 1
    print("site check passed")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C.UTF-8")
    sys.exit(main())
