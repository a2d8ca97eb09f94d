"""The five built-in agent definitions (Markdown files, shipped as package data)."""
