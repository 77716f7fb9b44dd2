"""The rules of the REST contract that the client and the server both follow.

One home for them, so the two sides cannot drift apart:

- `routes`: route templates, media types, header names, the API prefix, the default port;
- `ids`: identifiers as text (the delimiter, joining and splitting);
- `defaults`: the main branch, search and listing defaults, environment variable names;
- `schema_json`: Arrow schemas as JSON, in both directions;
- `sql`: one tokenizer for filters (literals, comments, ``?`` placeholders, parentheses).

Standard library and pyarrow only: never pandas, polars, requests, starlette or lance
(`tests/test_import_boundaries.py` checks). The package itself imports nothing, so a
caller that needs only the routes does not load pyarrow.
"""
