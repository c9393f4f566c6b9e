"""Text, JSON documents and figures of every result kind (no simulation here)."""
