"""pytest's hooks for every test folder: nbval compares a chapter's outputs without its progress bars.

A cell that compiles shows a bar only while something is left to compile (a fresh compile cache); the saved
outputs carry none (research.notebooks strips them, and a test holds them so). Both sides of nbval's comparison
drop them alike, so a chapter run cold passes as one run warm."""


def pytest_configure(config):
    try:
        from nbval.plugin import IPyNbCell
    except ImportError:          # nbval is not installed: no notebook is collected
        return
    from gemmlab.research.notebooks import is_progress

    compare = IPyNbCell.compare_outputs
    if getattr(compare, "drops_progress", False):
        return

    def compare_outputs(self, test, ref, skip_compare=None):
        return compare(self, [o for o in test if not is_progress(o)], [o for o in ref if not is_progress(o)],
                       skip_compare)

    compare_outputs.drops_progress = True
    IPyNbCell.compare_outputs = compare_outputs
