"""Reputation's evidence in the store: records kept, trust read back, the person's judgements."""
