"""One request model per operation: the members it takes, typed, with defaults and bounds.

`ROUTES` (in `_routes`) names each operation's model; `_http.endpoint` fills it from the
JSON body and the query string (`_http.validation`) before the handler runs, so every
handler receives typed, checked values. The envelope every body may carry (`id`,
`context`, `identity`) is `_http.validation.Envelope`; listings extend
`_http.pagination.PageRequest`; the vector and full-text members are declared by
`_search.vector` and `_search.fts`, which know what they mean.
"""
