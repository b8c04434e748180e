"""Typer command functions, one module per command family; options in, library call, renderer out."""
