"""Package UI: the declarative views a package lists under contributes.ui, drawn by the hub.

specs.py reads a package's spec files (confined to the package, bounded, cached); render.py
turns a spec and its state into a plain tree of nodes our templates draw (every string is text,
every style a class of our own); selectors.py finds the specs of a session's active packages and
their states from committed plugin data, for the page, the fragment the page refreshes, and the
API (`/api/sessions/{id}/slots` and each turn's `blocks`). See docs/play.md, "Package UI".
"""
