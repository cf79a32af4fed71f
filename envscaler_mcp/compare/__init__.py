"""Pure state comparison: state diffs, free fields, record matching and the state check against a reference."""
