"""The glossary: every statistic and state word a page shows, said plainly in a line or two. The help page
lists them; `{% term "slug" %}` (judgeapp/web/templatetags.py) links a figure's name to its entry."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    slug: str
    term: str
    short: str  # one sentence: the tooltip, and the entry's first line
    more: str = ""  # what a reviewer does with it
    also: str = ""  # the names the same thing goes by on the pages


ENTRIES = (
    # --- States --------------------------------------------------------------------------------------------
    Entry("calibrated", "calibrated",
          "People scored a sample of the judge's verdicts and the judge agreed with them at or above the lead's level.",
          "Read on the interval: the lower end of the agreement's 95% interval reaches the level."),
    Entry("locked", "locked",
          "The judge agreed with people below the lead's level, so no release gate that relies on it can pass.",
          "Shown with its figure, e.g. “locked: agreement 0.41 with people, level 0.60”. A fresh sample that "
          "reaches the level lifts it; a lead may also lift it by hand, with a reason.",
          "below level — locked"),
    Entry("unlocked", "unlocked",
          "A lock lifted: by a new sample that reaches the level, or by a lead, with a reason."),
    Entry("undecided", "undecided",
          "The agreement's 95% interval lies across the level: more labelled items are needed to say which side it is on.",
          "The page says about how many more items would settle it."),
    Entry("too-few-labels", "too few labels",
          "People have labelled fewer items than the lead's minimum, so the figure cannot lock or unlock the judge yet."),
    Entry("labels-unreliable", "labels unreliable",
          "The people who labelled do not agree enough among themselves (agreement among annotators below the "
          "lead's floor), so their labels cannot decide for the judge."),
    Entry("not-calibrated", "not calibrated",
          "No person has scored a sample of this judge's verdicts for this task yet.",
          "By the lead's policy it warns on the gate or blocks it."),
    Entry("stale", "stale",
          "The judge's configuration or prompt changed since the sample that calibrated it: its agreement may no longer hold."),
    Entry("unchecked", "unchecked judge",
          "A judge no person has scored yet, one with too few labels, or one whose labels are unreliable: the "
          "lead's policy says whether it warns on the gate or blocks it."),
    Entry("gate-passed", "gate passed",
          "The run met every rule of the release gate: its mean at or above the threshold, not worse than its "
          "baseline, its judge not locked, and nothing else the lead's policy blocks on."),
    Entry("gate-blocked", "gate blocked",
          "At least one rule of the release gate failed; the reasons are listed with the run."),
    Entry("invalid", "invalid",
          "Too many judgments had no usable reply (more than 5%), or a comparison could not be made: the figures are "
          "shown, but the run decides nothing."),
    Entry("flaky", "flaky",
          "Asked more than once, the judge changed its verdict too often, so the gate's outcome could flip by chance.",
          "The release policy says whether a flaky gate only notes it or blocks."),
    Entry("inconclusive", "inconclusive",
          "The comparison could not name a winner: the two orders disagreed too often, or the difference could be chance."),
    # --- Statistics ----------------------------------------------------------------------------------------
    Entry("interval", "95% interval",
          "The range the true value most likely lies in; a narrower range means more certainty.",
          "The level is read on the interval, not the single figure."),
    Entry("bootstrap", "bootstrap interval",
          "An interval found by redrawing the items at random many times and seeing how much the figure moves.",
          also="percentile bootstrap, paired bootstrap"),
    Entry("bca", "BCa",
          "A bootstrap interval corrected for skew and bias (bias-corrected and accelerated); more accurate on small samples."),
    Entry("wilson", "Wilson interval",
          "An interval for a share (such as 17 of 24), which stays sensible near 0% and 100% and on few items."),
    Entry("kappa", "Cohen's kappa",
          "Agreement between two raters (here the judge and people) beyond what chance alone would give: 1 is "
          "perfect, 0 is no better than chance, below 0 is worse.",
          "Quadratic-weighted kappa counts a near miss on a 1–5 scale as partly right.",
          "quadratic-weighted kappa"),
    Entry("exact-agreement", "exact agreement",
          "The share of items where the judge gave exactly the people's label."),
    Entry("alpha", "agreement among annotators",
          "How much the people who labelled the same items agree with each other (Krippendorff's alpha): 1 is "
          "perfect, 0 is chance. Labels from people who disagree cannot vouch for a judge.",
          also="Krippendorff's alpha"),
    Entry("ppi", "human-corrected mean",
          "The judge's mean corrected with the items people also labelled (prediction-powered inference, PPI++): "
          "it removes the judge's bias and comes with an honest interval.",
          also="PPI++, human-corrected estimate, human-corrected rate"),
    Entry("alt-test", "alt-test",
          "Whether the judge could stand in for a person: with each annotator left out in turn, does the judge "
          "agree with the remaining people at least as well as that annotator does, within a margin ε?",
          also="alternative annotator test"),
    Entry("sign-test", "sign test",
          "Counts the cases each side won and asks how likely such a split is if both were equally good; a small "
          "p (below 0.05) means the winner is unlikely to be chance."),
    Entry("position-bias", "position bias",
          "A judge's habit of preferring whichever answer it is shown first (or second). Judging every pair in "
          "both orders shows it and cancels it.",
          also="position consistency"),
    Entry("trials", "trials and noise",
          "Each judgment asked several times, each a call of its own; the share of judgments whose verdict changed "
          "is the noise, and agreement between trials the retest agreement.",
          also="retest agreement"),
    Entry("bradley-terry", "Bradley–Terry",
          "A model that turns many pairwise wins and losses into one score per item, and so into a ranking."),
    Entry("binary-insertion", "binary insertion",
          "Placing a new item in a ranked list by comparing it with the top, then the bottom, then halving the "
          "middle: at most 2 + log2 N comparisons."),
    Entry("draw-number", "draw number",
          "The number that fixes a random draw: the same number draws the same items again."),
)

BY_SLUG = {entry.slug: entry for entry in ENTRIES}
