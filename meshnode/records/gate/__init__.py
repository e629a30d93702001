"""The action gate's records: confirmation requests, drafts and the snapshots taken before a commit,
the budget of tool calls, and the person's decisions on them. The gate's jail (its workspace) is
passed in: nothing here imports the gate."""
