"""Running a plan: the runner, its harness, preflight, resume, the plan's estimates and
clean-up of what a run created."""
