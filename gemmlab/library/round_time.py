"""Chapter 14's change: how long the busiest SM takes over a launch's blocks, counted in rounds.

gemmlab.matmul's plan (gemmlab/library/dispatch.py) prices a tiled kernel's launch as rounds of blocks: an SM
holds `per_sm` blocks at a time, and the launch lasts as long as its busiest SM takes. A round with
fewer blocks than the SM holds is quicker, as they share the SM with fewer others, but not in
proportion: one block alone takes `alone` of a full round (fitted per configuration: 64 threads
alone leave most of an SM idle, 256 much less), and a last round of j blocks lies on the line
between one block alone and a full round. gemmlab ships the solution in gemmlab/library/round_time.py; the
copy in a learner's workspace has the starter between the `# exercise:` lines instead. The checker compares
the function with the plan's own arithmetic (time_model.features and time_model.waves).
"""


def round_time(blocks: int, sm_count: int, per_sm: int, alone: float) -> float:
    """The busiest SM's time for `blocks` blocks on `sm_count` SMs holding `per_sm` blocks each, in
    units of one full round (per_sm blocks side by side). A block alone on an SM takes `alone` of a
    round, never less than 1 / per_sm."""
    # exercise: begin
    alone = max(alone, 1 / per_sm)
    busiest = -(-blocks // sm_count)              # the busiest SM's blocks: the launch waits for it
    rounds, last = divmod(busiest, per_sm)        # whole rounds, and the blocks of a last round
    if last == 0:
        return float(rounds)
    return rounds + alone + (1 - alone) * (last - 1) / max(per_sm - 1, 1)
    # exercise: end
