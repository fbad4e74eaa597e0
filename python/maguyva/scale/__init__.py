"""Large repositories: dry-run estimates, memory accounting and budgets, distributed
extraction with Ray, and vector stores beyond the local Hamming index (docs/scale.md)."""
