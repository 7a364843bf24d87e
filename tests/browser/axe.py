"""axe-core in a page: injected from the vendored file (no network), run over WCAG 2.x A and AA rules."""

from pathlib import Path

AXE_VERSION = "4.14.1"  # tests/browser/vendor/README.md says where it came from and how to update it
AXE_JS = Path(__file__).parent / "vendor" / "axe.min.js"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
IMPACTS = ("critical", "serious", "moderate", "minor")


def axe_run(page) -> list[dict]:
    """The violations on the page as it is now: each {id, impact, help, nodes: [{target, html, summary}]}."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE_JS))
    return page.evaluate(
        """async (tags) => {
            const results = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
            return results.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 160),
                                          summary: (n.failureSummary || '').slice(0, 300)})),
            }));
        }""",
        WCAG_TAGS,
    )
