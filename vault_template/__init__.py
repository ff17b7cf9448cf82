"""The files ``engram init`` lays into a new vault (package data, found after any install)."""
