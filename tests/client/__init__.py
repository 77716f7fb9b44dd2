"""nsframe's client side: connections, tables, queries, frames, accessors, widgets, CLI, docs."""
