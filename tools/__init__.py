"""Scripts that work on the repository (not shipped in the wheel); run them with ``python -m``."""
