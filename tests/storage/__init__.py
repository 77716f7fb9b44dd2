"""Black-box tests of the storage layer: real server processes over one storage root.

They talk HTTP only, to `nsframe serve` processes started by `_servers.py`, and look at
the disk only through `_disk.py` (which assumes no layout). Select them with
``-m multiprocess`` (several servers on one root) and ``-m crash`` (a server killed
mid-operation and restarted); ``-m "not multiprocess and not crash"`` leaves them out.
"""
