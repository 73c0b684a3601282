"""The local web UI: FastAPI app factory, routes, static page."""
