"""The domain's records in the store: reads, writes and the hooks the store calls. Above the store and
the pure domain rules (it joins them), below the net and the app that use it."""
