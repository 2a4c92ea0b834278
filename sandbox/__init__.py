"""A local, stateful implementation of the Outreach Campaign Service API, with a control plane.

See sandbox/README.md for the decisions taken where the spec says "not shown".
"""
