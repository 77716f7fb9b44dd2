"""The embedded transport's side channel: ASGI scope and message keys that the
in-process client (`nsframe._client.inprocess`) and the server (`server._http`) share.

No HTTP request can carry them: a server reads them only from a scope its own process
built.
"""

# In the scope: the request came from the embedded client, in this process.
IN_PROCESS = "nsframe.in_process"
# In the scope: the caller takes a query's result as Arrow data, not IPC bytes.
ACCEPTS_ARROW = "nsframe.accepts_arrow"
# In the response's start message: the result table itself, when the server hands it so.
ARROW_MEMBER = "nsframe.arrow"
