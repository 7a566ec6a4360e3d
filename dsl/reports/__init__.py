"""Reports: design-doc traceability and step-level results (pytest-bdd records → JSON, Cucumber, JUnit, trace)."""
