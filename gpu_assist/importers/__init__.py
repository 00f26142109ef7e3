"""Converters from other catalogs' formats into gpu-assist's offer schema."""
