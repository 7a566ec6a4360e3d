"""The language: load → validate → compile → graph → render → run → report → CLI."""
