"""The web notebook: an HTTP API, server-sent events, /metrics and small pages, served inside
`meshnode run` on the node's own trio nursery (protocols/web.md)."""
