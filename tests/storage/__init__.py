"""Black-box tests of the storage layer: real server processes over one storage root."""
