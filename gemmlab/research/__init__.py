"""Research: what makes and checks the course's data, kept apart from what a learner imports.

Fitting gemmlab.matmul's model, its training campaigns, the recorder that runs every measurement
programme on a GPU, the tools that hold the prose to the record (figures, claims), and the runner that
executes the notebooks. It imports the course and the library; neither imports it (docs/architecture.md).
"""
