"""The test suite, a package so that its helpers import as ``tests.support``.

pytest's default import mode ("prepend") puts the first directory above a test file that has
no ``__init__.py`` on ``sys.path``: with this file, that is the repository root, whether pytest
runs the whole suite (``testpaths``) or one file. Fixtures live in the conftest.py files; plain
helpers live in ``tests/support``, and no test module imports another test module.
"""
